// Applies the unified diff that `edit` prints (LF files) to the old text — an independent reader of the format, so
// tests can check that the file on disk changed exactly as the diff says.
export function applyUnifiedDiff(oldText: string, diff: string[]): string {
  const old = oldText === '' ? [] : oldText.split(/(?<=\n)/)
  const out: string[] = []
  let next = 0 // index into old of the first line not yet copied
  for (let i = 0; i < diff.length; i++) {
    const header = /^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$/.exec(diff[i]!)
    if (!header) continue
    const oldStart = Number(header[1])
    const oldCount = Number(header[2])
    const from = oldCount === 0 ? oldStart : oldStart - 1
    while (next < from) out.push(old[next++]!)
    for (i++; i < diff.length && !diff[i]!.startsWith('@@'); i++) {
      const line = diff[i]!
      const noNewline = diff[i + 1] === '\\ No newline at end of file'
      const body = line.slice(1) + (noNewline ? '' : '\n')
      if (line[0] === ' ') {
        if (old[next] !== body)
          throw new Error(
            `context mismatch at old line ${next + 1}: ${JSON.stringify(old[next])} vs ${JSON.stringify(body)}`,
          )
        out.push(old[next++]!)
      } else if (line[0] === '-') {
        if (old[next] !== body) throw new Error(`removal mismatch at old line ${next + 1}`)
        next++
      } else if (line[0] === '+') out.push(body)
      if (noNewline) i++
    }
    i--
  }
  while (next < old.length) out.push(old[next++]!)
  return out.join('')
}

/** The hunk lines of an `edit` result (everything after the `+++` header). */
export function diffOfResult(text: string): string[] {
  const lines = text.split('\n')
  return lines.slice(lines.findIndex((line) => line.startsWith('+++ ')) + 1)
}
