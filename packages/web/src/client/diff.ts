// An `edit`/`write` result's diff as rows with line numbers, for the coloured diff view. Read from the result's
// `details` (packages/fs puts the hunks there); a result logged before `details` existed shows as plain text.
import type { DiffDetails } from '@keel/session'

export type DiffRow =
  | { kind: 'hunk'; text: string }
  | { kind: 'add'; text: string; newLine: number }
  | { kind: 'del'; text: string; oldLine: number }
  | { kind: 'context'; text: string; oldLine: number; newLine: number }
  /** `\ No newline at end of file`, or how many diff lines the log did not keep. */
  | { kind: 'note'; text: string }

/** The hunks as rows: a header row per hunk, then each line numbered on its side(s). */
export function rowsOf(details: DiffDetails): DiffRow[] {
  const rows: DiffRow[] = []
  for (const hunk of details.hunks) {
    rows.push({ kind: 'hunk', text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@` })
    // An empty side starts after its line `start` (GNU convention), so its next line is start + 1 either way.
    let oldLine = hunk.oldLines ? hunk.oldStart : hunk.oldStart + 1
    let newLine = hunk.newLines ? hunk.newStart : hunk.newStart + 1
    for (const line of hunk.lines) {
      const text = line.slice(1)
      if (line[0] === '+') rows.push({ kind: 'add', text, newLine: newLine++ })
      else if (line[0] === '-') rows.push({ kind: 'del', text, oldLine: oldLine++ })
      else if (line[0] === ' ') rows.push({ kind: 'context', text, oldLine: oldLine++, newLine: newLine++ })
      else rows.push({ kind: 'note', text: line })
    }
  }
  if (details.omitted) rows.push({ kind: 'note', text: `… ${details.omitted} more diff lines were not kept` })
  return rows
}

/** The last `count` non-empty lines of a tool's output, for the row's preview. */
export function lastLines(text: string, count: number): string {
  const lines = text.replace(/\s+$/, '').split('\n')
  return lines.slice(-count).join('\n')
}
