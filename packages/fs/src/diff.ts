// Unified diffs for `edit` and `write`, from the `diff` package (jsdiff). Edits touch a few lines of a file, so its
// Myers search ends quickly; past `MAX_EDITS` changed lines it gives up and the changed middle (after the common
// prefix and suffix) is shown as one block replacement, which is still a correct diff, just not a minimal one.
import { structuredPatch } from 'diff'
import type { DiffDetails, DiffHunk } from '@keel/tools'
import { cutChars } from './lines.ts'

export interface UnifiedDiff {
  hunks: DiffHunk[]
  /** Hunks only (no file header), one string per output line. */
  lines: string[]
  added: number
  removed: number
}

/**
 * Diff lines a result's `details` keeps for front ends: more than the model is shown (`maxDiffLines`), since a person
 * can expand it, but bounded so one rewrite of a large file does not bloat the log.
 */
export const DETAILS_DIFF_LINES = 2000

/** Changed lines jsdiff may search for before the diff settles for one block replacement. */
const MAX_EDITS = 1000
const NO_NEWLINE = '\\ No newline at end of file'

/** Splits keeping each line's terminator, so a missing final newline is a visible difference. */
function splitLines(text: string): string[] {
  return text ? text.split(/(?<=\n)/) : []
}

/** A unified diff with `context` lines around each change; CR before LF is not shown (the bytes are still diffed). */
export function unifiedDiff(oldText: string, newText: string, context = 3): UnifiedDiff {
  let hunks: DiffHunk[]
  if (oldText === newText) hunks = []
  else {
    const patch = structuredPatch('', '', oldText, newText, undefined, undefined, { context, maxEditLength: MAX_EDITS })
    hunks = patch ? patch.hunks.map(normalise) : [blockReplacement(oldText, newText, context)]
  }
  const lines: string[] = []
  let added = 0
  let removed = 0
  for (const hunk of hunks) {
    lines.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, ...hunk.lines)
    for (const line of hunk.lines) {
      if (line[0] === '+') added++
      else if (line[0] === '-') removed++
    }
  }
  return { hunks, lines, added, removed }
}

/** jsdiff numbers an empty side from the line after; GNU diff (and every reader) from the line before. */
function normalise(hunk: DiffHunk): DiffHunk {
  return {
    oldStart: hunk.oldLines ? hunk.oldStart : hunk.oldStart - 1,
    oldLines: hunk.oldLines,
    newStart: hunk.newLines ? hunk.newStart : hunk.newStart - 1,
    newLines: hunk.newLines,
    lines: hunk.lines.map((line) => (line[0] === '\\' ? line : line.replace(/\r$/, ''))),
  }
}

function pushLine(out: string[], sign: string, line: string): void {
  out.push(sign + line.replace(/\r?\n$/, ''))
  if (!line.endsWith('\n')) out.push(NO_NEWLINE)
}

/** The whole changed middle as removed-then-added lines, with `context` lines of the common ends around it. */
function blockReplacement(oldText: string, newText: string, context: number): DiffHunk {
  const a = splitLines(oldText)
  const b = splitLines(newText)
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  const from = Math.max(0, start - context)
  const tail = Math.min(context, a.length - endA)
  const lines: string[] = []
  for (const line of a.slice(from, start)) pushLine(lines, ' ', line)
  for (const line of a.slice(start, endA)) pushLine(lines, '-', line)
  for (const line of b.slice(start, endB)) pushLine(lines, '+', line)
  for (const line of a.slice(endA, endA + tail)) pushLine(lines, ' ', line)
  const oldLines = endA + tail - from
  const newLines = endB + tail - from
  return {
    oldStart: oldLines ? from + 1 : from,
    oldLines,
    newStart: newLines ? from + 1 : from,
    newLines,
    lines,
  }
}

/**
 * The diff as `details` for the log: at most `maxLines` diff lines, each cut to `maxLineChars` (a minified file's
 * line could be megabytes); `omitted` counts what was left out.
 */
export function diffDetails(
  path: string,
  diff: UnifiedDiff,
  options: { created: boolean; maxLines: number; maxLineChars: number },
): DiffDetails {
  const hunks: DiffHunk[] = []
  let budget = options.maxLines
  let omitted = 0
  for (const hunk of diff.hunks) {
    if (budget <= 0) {
      omitted += hunk.lines.length
      continue
    }
    const kept = hunk.lines.slice(0, budget)
    omitted += hunk.lines.length - kept.length
    budget -= kept.length
    hunks.push({
      ...hunk,
      lines: kept.map((line) =>
        line.length > options.maxLineChars + 1 ? `${cutChars(line, options.maxLineChars + 1)} …` : line,
      ),
    })
  }
  return {
    kind: 'diff',
    path,
    created: options.created,
    added: diff.added,
    removed: diff.removed,
    hunks,
    omitted,
  }
}
