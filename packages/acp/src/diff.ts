import { resolve } from 'node:path'
import type { DiffDetails } from '@keel/session'

/** One file's change, as an ACP `diff` tool-call content wants it: `oldText` null for a new file. */
export interface FileDiff {
  path: string
  oldText: string | null
  newText: string
}

/**
 * A finished `edit`/`write` as an ACP diff, from the result's `details` (packages/fs). Each side is the hunks' lines
 * on that side (context and removed lines; context and added lines), hunk after hunk: the client diffs the two and
 * finds exactly the changed lines, without Keel shipping whole files. A created file has no old side.
 */
export function diffFromDetails(details: DiffDetails, cwd: string): FileDiff {
  const oldLines: string[] = []
  const newLines: string[] = []
  for (const hunk of details.hunks) {
    for (const line of hunk.lines) {
      if (line[0] === ' ' || line[0] === '-') oldLines.push(line.slice(1))
      if (line[0] === ' ' || line[0] === '+') newLines.push(line.slice(1))
    }
  }
  return {
    path: resolve(cwd, details.path),
    oldText: details.created ? null : oldLines.join('\n'),
    newText: newLines.join('\n'),
  }
}

/**
 * A Keel `edit` call waiting for approval has no result yet: its own arguments (`path`, `old_string`, `new_string`)
 * are the change it asks to make. Anything else (a whole-file write, whose old content is unknown) shows no diff.
 */
export function diffOfEditArgs(args: unknown, cwd: string): FileDiff | undefined {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return undefined
  const { path, old_string: oldText, new_string: newText } = args as Record<string, unknown>
  if (typeof path !== 'string' || !path || typeof oldText !== 'string' || typeof newText !== 'string') return undefined
  return { path: resolve(cwd, path), oldText, newText }
}
