import { resolve } from 'node:path'
import { defineTool, Type } from '@keel/tools'
import type { Config } from './config.ts'
import { DETAILS_DIFF_LINES, diffDetails, unifiedDiff } from './diff.ts'
import { formatBytes, plural } from './format.ts'
import { cutChars } from './lines.ts'
import { readAll, replaceFile, withRegular } from './open.ts'
import { nearMatchHint } from './near-match.ts'
import { refuseProtected, resolvePath } from './paths.ts'
import { sniff, SNIFF_BYTES } from './sniff.ts'

export const EditParameters = Type.Object(
  {
    path: Type.String({ description: 'File path, relative to the working directory or absolute.' }),
    old_string: Type.String({ description: 'The exact text to replace, whitespace and indentation included.' }),
    new_string: Type.String({ description: 'The text to put in its place.' }),
    replace_all: Type.Optional(Type.Boolean({ description: 'Replace every occurrence instead of exactly one.' })),
  },
  { additionalProperties: false },
)

/** Non-overlapping occurrences, left to right. */
export function occurrences(text: string, needle: string): number[] {
  const found: number[] = []
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) found.push(at)
  return found
}

/** 1-based line numbers of ascending offsets, in one pass. */
export function lineNumbersOf(text: string, offsets: readonly number[]): number[] {
  const out: number[] = []
  let line = 1
  // The next newline is remembered, not searched for again per offset: a long line with many matches stays linear.
  let newline = text.indexOf('\n')
  for (const offset of offsets) {
    while (newline >= 0 && newline < offset) {
      line++
      newline = text.indexOf('\n', newline + 1)
    }
    out.push(line)
  }
  return out
}

/** Distinct line numbers (two matches on one line name it once), at most ten. */
function listLines(lines: readonly number[]): string {
  const distinct = [...new Set(lines)]
  const shown = distinct.slice(0, 10).join(', ')
  return distinct.length > 10 ? `${shown}, …` : shown
}

/** Most files are all-LF or all-CRLF; the model nearly always writes LF. Follow whichever the file mostly uses. */
function lineEndingVariants(
  text: string,
  oldString: string,
  newString: string,
): { old: string; new: string; crlf: boolean }[] {
  const crlf = text.split('\r\n').length - 1
  const lf = text.split('\n').length - 1 - crlf
  const useCrlf = crlf > lf
  const adapt = (s: string) => (useCrlf ? s.replace(/\r?\n/g, '\r\n') : s.replace(/\r\n/g, '\n'))
  const variants = [{ old: adapt(oldString), new: adapt(newString), crlf: useCrlf }]
  if (variants[0]!.old !== oldString) variants.push({ old: oldString, new: newString, crlf: false })
  return variants
}

function notFoundHint(text: string, oldString: string): string {
  if (/^ *\d+\t/.test(oldString))
    return 'old_string seems to start with a line-number prefix from read output; leave the numbers and the tab out.'
  const near = nearMatchHint(text, oldString)
  if (near) return near
  const first = oldString
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '')
  if (first) {
    const hits: number[] = []
    text.split('\n').forEach((line, i) => {
      if (line.trim() === first) hits.push(i + 1)
    })
    if (hits.length)
      return `Its first line appears, ignoring indentation, at line ${listLines(hits)}; what follows or the whitespace differs. Read the file again and copy the text exactly.`
  }
  return 'Read the file again and copy the text exactly, whitespace included.'
}

/** A diff line of a minified file could be megabytes; the result shows its start and says how long it was. */
function cutDiffLine(line: string, max: number): string {
  if (line.length <= max + 1) return line
  return `${cutChars(line, max + 1)} … [line cut at ${max} characters; ${line.length - 1} in full]`
}

export function editTool(config: Config) {
  return defineTool({
    name: 'edit',
    description:
      "Replace exact text in a file. old_string must match the file exactly (whitespace included, without read's line-number prefix) and occur once; include surrounding lines to make it unique, or set replace_all. Returns a diff. Use write to create files.",
    parameters: EditParameters,
    access: (args, cwd) => ({ kind: 'write', paths: [resolve(cwd, args.path)] }),
    presentCall: (args) => ({
      title: `Edit ${args.path}`,
      kind: 'edit',
      rawInput: args,
      locations: [{ path: args.path }],
    }),
    async execute(args, exec) {
      const target = await resolvePath(args.path, exec, config)
      refuseProtected(target, exec)
      const tooLarge = (size: number) =>
        new Error(`${target.display} is ${formatBytes(size)}, over the ${formatBytes(config.maxEditBytes)} edit limit`)
      const { bytes, mode } = await withRegular(target, 'edit', async ({ handle, stats }) => {
        if (stats.size > config.maxEditBytes) throw tooLarge(stats.size)
        if (args.old_string === '')
          throw new Error('old_string is empty; to create or overwrite a whole file use write')
        if (args.old_string === args.new_string)
          throw new Error('old_string and new_string are identical; there is nothing to change')
        return {
          bytes: await readAll(handle, config.maxEditBytes, () => tooLarge(stats.size)),
          mode: stats.mode & 0o7777,
        }
      })
      const kind = sniff(bytes.subarray(0, SNIFF_BYTES))
      if (kind.kind !== 'text')
        throw new Error(
          `${target.display} is not a text file${kind.kind === 'binary' ? ` (${kind.why})` : ''}; edit changes text files only`,
        )
      const text = bytes.toString('utf8')
      // A file that is not valid UTF-8 would come back with U+FFFD where its bytes were: refuse instead of corrupting it.
      if (!Buffer.from(text, 'utf8').equals(bytes))
        throw new Error(`${target.display} is not valid UTF-8; edit would corrupt it`)

      const variants = lineEndingVariants(text, args.old_string, args.new_string)
      let chosen = variants[0]!
      let found = occurrences(text, chosen.old)
      for (const variant of variants.slice(1)) {
        if (found.length) break
        chosen = variant
        found = occurrences(text, variant.old)
      }
      if (!found.length)
        throw new Error(`old_string was not found in ${target.display}. ${notFoundHint(text, args.old_string)}`)
      const lines = lineNumbersOf(text, found)
      if (found.length > 1 && !args.replace_all) {
        throw new Error(
          `old_string matches ${found.length} times in ${target.display} (lines ${listLines(lines)}); add surrounding lines to make it unique, or set replace_all to change every one`,
        )
      }
      const updated = args.replace_all
        ? text.split(chosen.old).join(chosen.new)
        : text.slice(0, found[0]) + chosen.new + text.slice(found[0]! + chosen.old.length)
      if (updated === text) throw new Error('the edit changes nothing once line endings are matched to the file')
      if (exec.signal.aborted) throw new Error('edit aborted before writing')
      await replaceFile(target, updated, { create: false, mode, signal: exec.signal })

      const diff = unifiedDiff(text, updated)
      const shown = diff.lines.slice(0, config.maxDiffLines).map((line) => cutDiffLine(line, config.maxLineChars))
      if (diff.lines.length > shown.length)
        shown.push(`… ${plural(diff.lines.length - shown.length, 'more diff line')} not shown`)
      const where =
        found.length === 1
          ? `1 replacement at line ${lines[0]}`
          : `${found.length} replacements at ${new Set(lines).size === 1 ? 'line' : 'lines'} ${listLines(lines)}`
      const endings = chosen.crlf ? '; CRLF line endings kept' : ''
      const result = [
        `Edited ${target.display}: ${where} (+${diff.added} -${diff.removed} lines${endings}).`,
        `--- ${target.display}`,
        `+++ ${target.display}`,
        ...shown,
      ].join('\n')
      return {
        content: [{ type: 'text', text: result }],
        details: diffDetails(target.display, diff, {
          created: false,
          maxLines: DETAILS_DIFF_LINES,
          maxLineChars: config.maxLineChars,
        }),
      }
    },
  })
}
