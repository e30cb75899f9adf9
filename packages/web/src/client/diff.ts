// Reads the unified diff that the `edit` tool puts in its result text (packages/fs: a summary line, `--- path`,
// `+++ path`, then `@@ -a,b +c,d @@` hunks) into rows with line numbers, for the coloured diff view.

export type DiffRow =
  | { kind: 'hunk'; text: string }
  | { kind: 'add'; text: string; newLine: number }
  | { kind: 'del'; text: string; oldLine: number }
  | { kind: 'context'; text: string; oldLine: number; newLine: number }
  /** `\ No newline at end of file`, or the tool's "… N more diff lines not shown". */
  | { kind: 'note'; text: string }

export interface ParsedDiff {
  /** Lines before the `---` header (the tool's summary). */
  summary: string
  path: string
  rows: DiffRow[]
  added: number
  removed: number
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/

/** The diff in a tool result, or undefined when the text holds none (an error, another tool's output). */
export function parseUnifiedDiff(text: string): ParsedDiff | undefined {
  const lines = text.split('\n')
  const start = lines.findIndex(
    (line, i) => line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ') && HUNK.test(lines[i + 2] ?? ''),
  )
  if (start < 0) return undefined
  const rows: DiffRow[] = []
  let oldLine = 0
  let newLine = 0
  let added = 0
  let removed = 0
  for (const line of lines.slice(start + 2)) {
    const hunk = HUNK.exec(line)
    if (hunk) {
      oldLine = Number(hunk[1])
      newLine = Number(hunk[2])
      rows.push({ kind: 'hunk', text: line })
    } else if (line.startsWith('+')) {
      rows.push({ kind: 'add', text: line.slice(1), newLine: newLine++ })
      added++
    } else if (line.startsWith('-')) {
      rows.push({ kind: 'del', text: line.slice(1), oldLine: oldLine++ })
      removed++
    } else if (line.startsWith(' ')) {
      rows.push({ kind: 'context', text: line.slice(1), oldLine: oldLine++, newLine: newLine++ })
    } else if (line) {
      rows.push({ kind: 'note', text: line })
    }
  }
  return { summary: lines.slice(0, start).join('\n'), path: lines[start]!.slice(4), rows, added, removed }
}

/** A new file's content as added lines (what `write` created), numbered from 1. */
export function addedRows(content: string): DiffRow[] {
  const lines = content.replace(/\n$/, '').split('\n')
  return content ? lines.map((text, i) => ({ kind: 'add', text, newLine: i + 1 })) : []
}

/** The result text of a call that was cancelled rather than failed (agent, tool registry and bash wordings). */
export function isCancelledResult(text: string): boolean {
  const trimmed = text.trimEnd()
  return (
    trimmed === 'Error: the turn was cancelled before this tool call started.' ||
    trimmed === 'Error: tool call aborted before it started' ||
    trimmed === 'Error: tool call aborted' ||
    trimmed.endsWith('[cancelled by the user]')
  )
}

/** The last `count` non-empty lines of a tool's output, for the row's preview. */
export function lastLines(text: string, count: number): string {
  const lines = text.replace(/\s+$/, '').split('\n')
  return lines.slice(-count).join('\n')
}
