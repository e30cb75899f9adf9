// When edit's old_string is not in the file, say what nearly matched and how it differs. A model cannot see trailing
// spaces, tabs, typographic quotes or line endings in read output, so "copy the text exactly" alone makes it fail
// again the same way. Only a hint: the edit is never applied to a near match, so a file is never rewritten in a
// way the model did not ask for.

/** The kinds of difference, each a way a line can be compared more loosely. */
const KINDS = [
  {
    name: 'line endings (the file has CRLF)',
    loosen: (line: string) => line.replace(/\r$/, ''),
  },
  {
    name: 'trailing whitespace',
    loosen: (line: string) => line.replace(/[ \t]+$/, ''),
  },
  {
    name: 'indentation (tabs vs spaces, or its depth)',
    loosen: (line: string) => line.replace(/^[ \t]+/, ''),
  },
  {
    name: 'typographic quotes or dashes (“ ” ‘ ’ – — vs " \' -)',
    loosen: (line: string) =>
      line
        .replace(/[\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb]/g, '"')
        .replace(/[\u2018\u2019\u201a\u201b\u2032]/g, "'")
        .replace(/[\u2010-\u2015\u2212]/g, '-')
        .replace(/\u2026/g, '...'),
  },
  {
    name: 'invisible or special spaces (non-breaking, zero-width, BOM)',
    loosen: (line: string) =>
      line.replace(/[\u00a0\u2000-\u200a\u202f\u205f\u3000]/g, ' ').replace(/[\u200b-\u200d\u2060\ufeff]/g, ''),
  },
  {
    name: 'Unicode normalization (the same letter encoded differently)',
    loosen: (line: string) => line.normalize('NFC'),
  },
] as const

const loosest = (line: string) => KINDS.reduce((out, kind) => kind.loosen(out), line)

/** How line i of an n-line old_string must sit in a file line: old_string may begin or end inside a line. */
type Fit = (line: string, want: string) => boolean
function fitOf(i: number, n: number): Fit {
  if (n === 1) return (line, want) => line.includes(want)
  if (i === 0) return (line, want) => line.endsWith(want)
  if (i === n - 1) return (line, want) => line.startsWith(want)
  return (line, want) => line === want
}

/** Where the loosened old_string lines sit in the loosened file lines (0-based start lines). */
function findLines(file: readonly string[], old: readonly string[]): number[] {
  const hits: number[] = []
  for (let start = 0; start + old.length <= file.length && hits.length <= 10; start++)
    if (old.every((want, i) => fitOf(i, old.length)(file[start + i]!, want))) hits.push(start)
  return hits
}

/** Which kinds explain the difference between one file line and one old_string line. */
function differences(fileLine: string, oldLine: string, fit: Fit): string[] {
  if (fit(fileLine, oldLine)) return []
  const found: string[] = []
  for (const kind of KINDS) {
    // A kind counts when loosening every other kind still leaves the lines apart.
    const [a, b] = KINDS.filter((other) => other !== kind).reduce(
      (pair, other) => [other.loosen(pair[0]), other.loosen(pair[1])],
      [fileLine, oldLine],
    )
    if (!fit(a, b)) found.push(kind.name)
  }
  return found.length ? found : ['a mix of whitespace and characters']
}

const SHOWN_LINES = 3
const SHOWN_CHARS = 160

/** A line as JSON, with the characters this hint is about written as escapes so they can be seen. */
function visible(line: string): string {
  const cut = line.length > SHOWN_CHARS ? `${line.slice(0, SHOWN_CHARS)}…` : line
  return JSON.stringify(cut).replace(
    /\p{Mn}|[\u00a0\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\ufeff]/gu,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}

/** A hint naming what nearly matched, or undefined when nothing does even loosely. */
export function nearMatchHint(text: string, oldString: string): string | undefined {
  // A model that wrote "\n" as two characters meant line breaks.
  if (!oldString.includes('\n') && oldString.includes('\\n') && text.includes(oldString.replace(/\\n/g, '\n')))
    return 'old_string contains \\n as two characters where the file has line breaks; send real line breaks.'
  const fileLines = text.split('\n')
  const oldLines = oldString.split('\n')
  // Blank edges carry no evidence and would match anywhere.
  while (oldLines.length > 1 && oldLines[0]!.trim() === '') oldLines.shift()
  while (oldLines.length > 1 && oldLines.at(-1)!.trim() === '') oldLines.pop()
  if (oldLines.every((line) => loosest(line).trim() === '')) return undefined
  const hits = findLines(fileLines.map(loosest), oldLines.map(loosest))
  if (!hits.length) return undefined
  const start = hits[0]!
  const where =
    hits.length === 1
      ? `line ${start + 1}`
      : `lines ${hits
          .slice(0, 10)
          .map((hit) => hit + 1)
          .join(', ')}${hits.length > 10 ? ', …' : ''} (${hits.length > 10 ? 'more than 10' : hits.length} places)`
  const kinds = new Set<string>()
  const shown: string[] = []
  let differing = 0
  oldLines.forEach((oldLine, i) => {
    const fileLine = fileLines[start + i]!
    const found = differences(fileLine, oldLine, fitOf(i, oldLines.length))
    if (!found.length) return
    differing++
    for (const kind of found) kinds.add(kind)
    if (shown.length < SHOWN_LINES)
      shown.push(`line ${start + i + 1} of the file is ${visible(fileLine)}; old_string has ${visible(oldLine)}`)
  })
  if (!kinds.size) return undefined
  const more = differing > shown.length ? ` (and ${differing - shown.length} more differing lines)` : ''
  return `It nearly matches at ${where}, differing only by ${[...kinds].join(' and ')}: ${shown.join('; ')}${more}. Copy the file's characters exactly.`
}
