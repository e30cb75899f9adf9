/** `1 line`, `2 lines`, `20,000 files`. */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  // Grouped by hand: the first toLocaleString of a process loads ICU's data, a profile's largest frame of a first grep.
  return `${String(count).replace(/\B(?=(\d{3})+(?!\d))/g, ',')} ${count === 1 ? noun : nouns}`
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** Lines as an editor counts them: a trailing newline does not start another line. */
export function countLines(text: string): number {
  if (!text) return 0
  let count = 0
  let at = -1
  while ((at = text.indexOf('\n', at + 1)) >= 0) count++
  return text.endsWith('\n') ? count : count + 1
}

/** Short, single-line form of model-supplied text for titles. */
export function clip(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}
