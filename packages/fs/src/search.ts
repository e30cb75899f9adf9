import { readlink, stat } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { resolve } from 'node:path'
import { defineTool, Type } from '@keel/tools'
import type { Config } from './config.ts'
import { clip, formatBytes, plural } from './format.ts'
import { limited, type CallLimit } from './limit.ts'
import { InlineMatcher, isLiteral, type Matcher, RegexMatcher, type FileToSearch } from './matcher.ts'
import { kindOf, openRegular, readAll } from './open.ts'
import { displayPath, resolvePath, type ResolvedPath } from './paths.ts'
import { sniff, SNIFF_BYTES } from './sniff.ts'
import { withRipgrepIgnoring } from './rg-ignore.ts'
import { globFilter, relativeOf, RipgrepFailed, ripgrep, ripgrepFiles, runRipgrep, toRipgrepRegex } from './ripgrep.ts'
import { FileReader, listFiles, walk } from './files.ts'

export { GREP_LINE_CHARS } from './matcher.ts'

const PathParameter = (what: string) =>
  Type.Optional(Type.String({ description: `${what} (default: the working directory).` }))

export const GrepParameters = Type.Object(
  {
    pattern: Type.String({ description: 'JavaScript regular expression, matched line by line.' }),
    path: PathParameter('File or directory to search'),
    glob: Type.Optional(
      Type.String({ description: 'Only files matching this glob, e.g. "*.ts" (any depth) or "src/**/*.tsx".' }),
    ),
    ignore_case: Type.Optional(Type.Boolean({ description: 'Match case-insensitively.' })),
  },
  { additionalProperties: false },
)

export const LsParameters = Type.Object(
  {
    path: PathParameter('Directory to list'),
  },
  { additionalProperties: false },
)

export const GlobParameters = Type.Object(
  {
    pattern: Type.String({
      description: 'Glob relative to path, e.g. "**/*.ts" or "src/*.{js,jsx}"; ** spans directories.',
    }),
    path: PathParameter('Directory to search from'),
  },
  { additionalProperties: false },
)

function checkGlob(glob: string, what: string): void {
  if (glob.startsWith('/') || glob.split('/').includes('..'))
    throw new Error(`${what} must be relative and stay inside the searched directory; put the directory in path`)
}

/** The target must exist; a directory is what the walking tools want, a regular file is what grep also takes. */
async function statTarget(target: ResolvedPath) {
  const info = await stat(target.real).catch(() => undefined)
  if (!info) throw new Error(`${target.display} does not exist`)
  return info
}

/** Files grep hands to the worker at once: few enough round trips, small enough batches to stop between. */
const BATCH_BYTES = 4 * 1024 * 1024
const BATCH_FILES = 64

/** What grep found to search, in path order, with what it passed over. */
interface Gathered {
  files: FileToSearch[]
  /** Asked only for a "No matches": through ripgrep it takes a listing. */
  searched: () => Promise<number>
  tooLarge: number
}

async function grep(
  config: Config,
  target: ResolvedPath,
  regex: RegExp,
  args: { pattern: string; glob?: string },
  limit: CallLimit,
): Promise<string> {
  const info = await statTarget(target)
  const single = !info.isDirectory()
  let gathered = single ? undefined : await searchWithRipgrep(config, target, regex, args.glob, limit)
  gathered ??= single
    ? await gatherOne(config, target, limit)
    : await gatherWalked(config, target, regex, args.glob, limit)

  // Started on the first batch: a search that finds no file to read never spawns a worker.
  let matcher: Matcher | undefined
  const shown: string[] = []
  let matches = 0
  let matchedFiles = 0
  let batch: FileToSearch[] = []
  let batchBytes = 0
  const flush = async () => {
    if (!batch.length) return
    matcher ??= isLiteral(regex.source)
      ? new InlineMatcher(regex.source, regex.flags)
      : new RegexMatcher(regex.source, regex.flags, limit.signal)
    const results = await limit.race(matcher.match(batch, config.maxGrepMatches - shown.length))
    for (const result of results) {
      if (result.count) matchedFiles++
      matches += result.count
      shown.push(...result.shown)
    }
    batch = []
    batchBytes = 0
  }
  try {
    for (const file of gathered.files) {
      limit.check()
      batch.push(file)
      batchBytes += file.bytes.length
      if (batchBytes >= BATCH_BYTES || batch.length >= BATCH_FILES) await flush()
    }
    await flush()
  } finally {
    void matcher?.close()
  }

  const notes: string[] = []
  if (gathered.tooLarge)
    notes.push(`${plural(gathered.tooLarge, 'file')} over ${formatBytes(config.maxGrepFileBytes)} skipped`)
  const noted = notes.length ? `\n(${notes.join('; ')})` : ''
  if (!matches)
    return `No matches for /${args.pattern}/ in ${target.display} (${plural(await limit.race(gathered.searched()), 'file')} searched).${noted}`
  let text = shown.join('\n')
  if (matches > shown.length) {
    text += `\n… ${plural(matches - shown.length, 'more match', 'more matches')} not shown (${matches} in ${plural(matchedFiles, 'file')}); narrow the pattern, path or glob.`
  }
  return text + noted
}

/** A file named as `path`: opened and checked on its descriptor; not a regular text file is an error. */
async function gatherOne(config: Config, target: ResolvedPath, limit: CallLimit): Promise<Gathered> {
  const opened = await openRegular(target.real, target.display, target, 'grep')
  try {
    if (opened.stats.size > config.maxGrepFileBytes)
      throw new Error(
        `${target.display} is ${formatBytes(opened.stats.size)}, over the ${formatBytes(config.maxGrepFileBytes)} grep limit`,
      )
    // A file that grew past the limit since it was measured counts as too large.
    const bytes = await limit.race(
      readAll(opened.handle, config.maxGrepFileBytes, () => new Error('grown'), opened.stats.size).catch(
        () => undefined,
      ),
    )
    if (!bytes) return { files: [], searched: async () => 0, tooLarge: 1 }
    if (sniff(bytes.subarray(0, SNIFF_BYTES)).kind !== 'text')
      throw new Error(`${target.display} is a binary file; grep searches text only`)
    return { files: [{ name: displayPath(target.cwd, target.absolute), bytes }], searched: async () => 1, tooLarge: 0 }
  } finally {
    await opened.handle.close()
  }
}

/**
 * The fallback for a directory: Keel's own walk (files.ts), the glob matched on it as through ripgrep, then every
 * file opened and checked on its descriptor (a regular file, inside the cwd); anything else (a FIFO, a device, a
 * file swapped for a link) is skipped. A literal pattern's bytes are looked for first: a file without them is
 * counted and never copied or matched.
 */
async function gatherWalked(
  config: Config,
  target: ResolvedPath,
  regex: RegExp,
  glob: string | undefined,
  limit: CallLimit,
): Promise<Gathered> {
  const inGlob = glob === undefined ? undefined : await globFilter(glob, true)
  const walked = await listFiles(target.real, target, limit.signal, inGlob)
  const literal = isLiteral(regex.source) && !regex.ignoreCase ? Buffer.from(regex.source) : undefined
  const keep = literal ? (bytes: Buffer) => bytes.indexOf(literal) >= 0 : () => true
  const reader = new FileReader(target, config.maxGrepFileBytes, limit.signal)
  let searched = 0
  const gathered: Gathered = { files: [], searched: async () => searched, tooLarge: 0 }
  for (const rel of walked) {
    const local = sep === '/' ? rel : rel.split('/').join(sep)
    const read = await reader.read(join(target.real, local), keep)
    if (read === 'skipped') continue
    if (read === 'too large') {
      gathered.tooLarge++
      continue
    }
    searched++
    if (read !== 'left')
      gathered.files.push({ name: displayPath(target.cwd, join(target.absolute, local)), bytes: read.bytes })
  }
  return gathered
}

/**
 * The same search through ripgrep, or `undefined` where it cannot promise the same answer (see ripgrep.ts and
 * rg-ignore.ts): ripgrep walks, applies the .gitignore files and picks the candidate lines of every text file
 * (binaries, found by their NUL bytes, are passed over); the glob is matched here on the files it found, and the
 * worker then matches the candidates with the JavaScript regex as it would the whole file.
 */
async function searchWithRipgrep(
  config: Config,
  target: ResolvedPath,
  regex: RegExp,
  glob: string | undefined,
  limit: CallLimit,
): Promise<Gathered | undefined> {
  const pattern = toRipgrepRegex(regex.source)
  if (pattern === undefined) return undefined
  const rg = await ripgrep(config.ripgrep)
  if (!rg) return undefined
  const inGlob = glob === undefined ? undefined : await globFilter(glob, true)
  const found = new Map<string, { lines: number[]; texts: Buffer[] }>()
  const binary = new Set<string>()
  const tooLarge = new Set<string>()
  const onRecord = (record: string) => {
    if (!record) return
    const event = JSON.parse(record) as RipgrepEvent
    if (event.type !== 'match' && event.type !== 'end') return
    const rel = relativeOf(textOf(event.data.path).toString('utf8'))
    if (rel === undefined) return
    if (event.type === 'match') {
      let file = found.get(rel)
      if (!file) found.set(rel, (file = { lines: [], texts: [] }))
      const text = textOf(event.data.lines)
      file.lines.push(event.data.line_number)
      file.texts.push(text.subarray(0, text.at(-1) === 0x0a ? -1 : undefined))
      return
    }
    if (!found.has(rel)) return
    if (event.data.binary_offset !== null) binary.add(rel)
    else if (event.data.stats.bytes_searched > config.maxGrepFileBytes) tooLarge.add(rel)
    else return
    found.delete(rel)
  }
  const flags = ['--json', '--crlf', '--encoding=none', ...(regex.ignoreCase ? ['--ignore-case'] : [])]
  let ignoring: string[] = []
  try {
    const ran = await withRipgrepIgnoring(
      target.real,
      target.realCwd,
      target.confined,
      limit.signal,
      (applying, stop) => {
        ignoring = applying
        const args = [...flags, ...ignoring, '-e', pattern, '--', '.']
        return runRipgrep(rg, target.real, args, '\n', stop, onRecord).then(() => true)
      },
    )
    if (!ran) return undefined
  } catch (error) {
    if (error instanceof RipgrepFailed) return undefined
    throw error
  }
  const kept = (rels: Iterable<string>) => (inGlob ? [...rels].filter(inGlob) : [...rels]).length
  const passed = kept(binary) + kept(tooLarge)
  const gathered: Gathered = {
    files: [],
    // ripgrep's JSON summary counts only the files with a match: the count a "No matches" needs takes a listing.
    searched: async () => kept(await ripgrepFiles(rg, target.real, ignoring, limit.signal)) - passed,
    tooLarge: kept(tooLarge),
  }
  for (const rel of [...found.keys()].sort()) {
    if (inGlob && !inGlob(rel)) continue
    const file = found.get(rel)!
    const bytes = Buffer.concat(file.texts.flatMap((text, i) => (i ? [NEWLINE, text] : [text])))
    const name = displayPath(target.cwd, join(target.absolute, rel.split('/').join(sep)))
    gathered.files.push({ name, bytes, lines: file.lines })
  }
  return gathered
}

const NEWLINE = Buffer.from('\n')

type RipgrepText = { text: string } | { bytes: string }
type RipgrepEvent =
  | { type: 'begin' | 'context' | 'summary'; data: unknown }
  | { type: 'match'; data: { path: RipgrepText; lines: RipgrepText; line_number: number } }
  | { type: 'end'; data: { path: RipgrepText; binary_offset: number | null; stats: { bytes_searched: number } } }

const textOf = (value: RipgrepText) =>
  'text' in value ? Buffer.from(value.text, 'utf8') : Buffer.from(value.bytes, 'base64')

export function grepTool(config: Config) {
  return defineTool({
    name: 'grep',
    description: `Search file contents with a JavaScript regular expression. Prints matching lines as file:line: text (at most ${config.maxGrepMatches}). Searches the working directory unless path is given; respects .gitignore and skips node_modules, .git and binary files.`,
    parameters: GrepParameters,
    access: (args, cwd) => ({ kind: 'read', paths: [resolve(cwd, args.path ?? '.')] }),
    concurrencySafe: true,
    presentCall: (args) => ({
      title: `Grep /${clip(args.pattern)}/${args.path ? ` in ${args.path}` : ''}${args.glob ? ` (${args.glob})` : ''}`,
      kind: 'read',
      rawInput: args,
      locations: args.path ? [{ path: args.path }] : [],
    }),
    async execute(args, exec) {
      let regex: RegExp
      try {
        regex = new RegExp(args.pattern, args.ignore_case ? 'i' : '')
      } catch (error) {
        throw new Error(`invalid regular expression: ${(error as Error).message}`)
      }
      if (args.glob !== undefined) checkGlob(args.glob, 'glob')
      const target = await resolvePath(args.path ?? '.', exec, config)
      return limited('grep', exec.signal, config.timeoutMs, (limit) => grep(config, target, regex, args, limit))
    },
  })
}

export function lsTool(config: Config) {
  return defineTool({
    name: 'ls',
    description:
      'List a directory: subdirectories (ending in /) first, then files. Respects .gitignore; node_modules and .git are left out.',
    parameters: LsParameters,
    access: (args, cwd) => ({ kind: 'read', paths: [resolve(cwd, args.path ?? '.')] }),
    concurrencySafe: true,
    presentCall: (args) => ({
      title: `List ${args.path ?? '.'}`,
      kind: 'read',
      rawInput: args,
      locations: [{ path: args.path ?? '.' }],
    }),
    async execute(args, exec) {
      const target = await resolvePath(args.path ?? '.', exec, config)
      return limited('ls', exec.signal, config.timeoutMs, (limit) => ls(config, target, limit))
    },
  })
}

async function ls(config: Config, target: ResolvedPath, limit: CallLimit): Promise<string> {
  const info = await statTarget(target)
  if (!info.isDirectory())
    throw new Error(
      `${target.display} is ${info.isFile() ? 'a file' : kindOf(info)}, not a directory${info.isFile() ? '; use read to see it' : ''}`,
    )
  const { entries, hidden } = await walk({
    root: target.real,
    cwd: target.realCwd,
    confined: target.confined,
    patterns: ['*'],
    onlyFiles: false,
    deep: 1,
    signal: limit.signal,
  })
  const dirs = entries.filter((entry) => entry.kind === 'dir')
  const rest = entries.filter((entry) => entry.kind !== 'dir')
  const lines: string[] = []
  for (const entry of [...dirs, ...rest].slice(0, config.maxEntries)) {
    if (entry.kind === 'dir') lines.push(`${entry.path}/`)
    else if (entry.kind === 'symlink') {
      const to = await readlink(join(target.real, entry.path)).catch(() => '?')
      lines.push(`${entry.path} -> ${to}`)
    } else lines.push(entry.path)
  }
  if (entries.length > config.maxEntries)
    lines.push(
      `… ${plural(entries.length - config.maxEntries, 'more entry', 'more entries')} not shown; use glob to narrow down.`,
    )
  if (!entries.length) lines.push(`${target.display} is empty.`)
  if (hidden) lines.push(`(${plural(hidden, 'entry', 'entries')} hidden: gitignored, node_modules or .git)`)
  return lines.join('\n')
}

export function globTool(config: Config) {
  return defineTool({
    name: 'glob',
    description: `Find files by name pattern, e.g. "**/*.test.ts". Returns paths sorted by name (at most ${config.maxEntries}). Respects .gitignore; skips node_modules and .git.`,
    parameters: GlobParameters,
    access: (args, cwd) => ({ kind: 'read', paths: [resolve(cwd, args.path ?? '.')] }),
    concurrencySafe: true,
    presentCall: (args) => ({
      title: `Glob ${clip(args.pattern)}${args.path ? ` in ${args.path}` : ''}`,
      kind: 'read',
      rawInput: args,
      locations: args.path ? [{ path: args.path }] : [],
    }),
    async execute(args, exec) {
      checkGlob(args.pattern, 'pattern')
      const target = await resolvePath(args.path ?? '.', exec, config)
      return limited('glob', exec.signal, config.timeoutMs, async (limit) => {
        const info = await statTarget(target)
        if (!info.isDirectory())
          throw new Error(`${target.display} is ${info.isFile() ? 'a file' : kindOf(info)}, not a directory`)
        // Keel's own listing: ripgrep's, with the scan rg-ignore.ts needs beside it, took longer (bench/search).
        const entries = await listFiles(target.real, target, limit.signal, await globFilter(args.pattern, false))
        if (!entries.length) return `No files match ${args.pattern} in ${target.display}.`
        const lines = entries
          .slice(0, config.maxEntries)
          .map((path) => displayPath(target.cwd, join(target.absolute, path.split('/').join(sep))))
        if (entries.length > config.maxEntries)
          lines.push(
            `… ${plural(entries.length - config.maxEntries, 'more file')} not shown (${entries.length} match); narrow the pattern.`,
          )
        return lines.join('\n')
      })
    },
  })
}
