// An `edit`/`write` result's diff as terminal lines: read from the result's `details` (never parsed from its text),
// numbered, added lines green and removed lines red, collapsed past DIFF_COLLAPSED_LINES until Ctrl+O.
import { truncateToWidth } from '@mariozechner/pi-tui'
import type { DiffDetails } from '@keel/session'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

/** Diff rows a card shows before it is expanded. */
export const DIFF_COLLAPSED_LINES = 40

export type DiffRow =
  /** Where a hunk starts, after the first: the lines in between are unchanged. */
  | { kind: 'gap' }
  | { kind: 'add'; line: number; text: string }
  | { kind: 'del'; line: number; text: string }
  | { kind: 'context'; line: number; text: string }
  /** `\ No newline at end of file`. */
  | { kind: 'note'; text: string }

/** The hunks as rows, each numbered in the file it belongs to: the new file for added and context lines, the old for removed. */
export function diffRows(details: DiffDetails): DiffRow[] {
  const rows: DiffRow[] = []
  details.hunks.forEach((hunk, i) => {
    if (i > 0) rows.push({ kind: 'gap' })
    // An empty side starts after its line `start` (GNU convention), so its next line is start + 1 either way.
    let oldLine = hunk.oldLines ? hunk.oldStart : hunk.oldStart + 1
    let newLine = hunk.newLines ? hunk.newStart : hunk.newStart + 1
    for (const line of hunk.lines) {
      const text = line.slice(1)
      switch (line[0]) {
        case '+':
          rows.push({ kind: 'add', line: newLine++, text })
          break
        case '-':
          rows.push({ kind: 'del', line: oldLine++, text })
          break
        case ' ':
          rows.push({ kind: 'context', line: newLine++, text })
          oldLine++
          break
        default:
          rows.push({ kind: 'note', text: line })
      }
    }
  })
  return rows
}

/** `+3 -1`, coloured, for the card's title line. */
export function diffCounts(details: DiffDetails): string {
  return [
    details.added ? style.green(`+${details.added}`) : '',
    details.removed ? style.red(`-${details.removed}`) : '',
  ]
    .filter(Boolean)
    .join(' ')
}

/** File text for one row: tabs as spaces, every control or invisible character shown, not obeyed. */
function cell(text: string): string {
  return escapeLine(text.replace(/\t/g, '    '))
}

/** The diff's rows as lines `width` wide; all of them when `expanded`, else the first DIFF_COLLAPSED_LINES. */
export function renderDiff(details: DiffDetails, width: number, expanded: boolean, indent = '    '): string[] {
  const rows = diffRows(details)
  const shown = expanded ? rows : rows.slice(0, DIFF_COLLAPSED_LINES)
  const digits = String(
    rows.reduce((max, row) => (row.kind === 'gap' || row.kind === 'note' ? max : Math.max(max, row.line)), 1),
  ).length
  const number = (line: number) => style.dim(String(line).padStart(digits))
  const blank = ' '.repeat(digits)
  const lines: string[] = []
  for (const row of shown) {
    let line: string
    switch (row.kind) {
      case 'gap':
        line = style.dim(`${blank} ⋯`)
        break
      case 'add':
        line = `${number(row.line)} ${style.green(`+ ${cell(row.text)}`)}`
        break
      case 'del':
        line = `${number(row.line)} ${style.red(`- ${cell(row.text)}`)}`
        break
      case 'context':
        line = `${number(row.line)}   ${cell(row.text)}`
        break
      case 'note':
        line = style.dim(`${blank}   ${cell(row.text)}`)
        break
    }
    lines.push(truncateToWidth(guardLine(indent + line), Math.max(1, width), '…'))
  }
  const notes: string[] = []
  if (shown.length < rows.length) notes.push(`… ${rows.length - shown.length} more diff lines  ctrl+o to expand`)
  if (details.omitted) notes.push(`… ${details.omitted} more diff lines were not kept`)
  for (const note of notes) lines.push(truncateToWidth(style.dim(indent + note), Math.max(1, width), '…'))
  return lines
}
