import { readlink, stat } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { resolve } from 'node:path'
import { defineTool, Type } from '@keel/tools'
import type { Config } from './config.ts'
import { clip, formatBytes, plural } from './format.ts'
import { limited, type CallLimit } from './limit.ts'
import { RegexMatcher, type FileToSearch } from './matcher.ts'
import { kindOf, openRegular, readAll } from './open.ts'
import { displayPath, resolvePath, type ResolvedPath } from './paths.ts'
import { sniff, SNIFF_BYTES } from './sniff.ts'
import { withRipgrepIgnoring } from './rg-ignore.ts'
import { globFilter, relativeOf, RipgrepFailed, ripgrep, ripgrepFiles, runRipgrep, toRipgrepRegex } from './ripgrep.ts'
import { byCodeUnits, walk } from './walk.ts'

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
/** Files the fallback opens and reads at once: each is seven thread-pool round trips, one file at a time was slow. */
const IN_FLIGHT = 16

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
  if (!gathered) {
    let rels = ['']
    if (!single) {
      const found = await walk({
        root: target.real,
        cwd: target.realCwd,
        confined: target.confined,
        patterns: [args.glob ?? '**/*'],
        onlyFiles: true,
        baseNameMatch: true,
        signal: limit.signal,
      })
      rels = found.entries.map((entry) => entry.path)
    }
    gathered = await gatherByReading(config, target, single, rels, limit)
  }

  // Started on the first batch: a search that finds no file to read never spawns a worker.
  let matcher: RegexMatcher | undefined
  const shown: string[] = []
  let matches = 0
  let matchedFiles = 0
  let batch: FileToSearch[] = []
  let batchBytes = 0
  const flush = async () => {
    if (!batch.length) return
    matcher ??= new RegexMatcher(regex.source, regex.flags, limit.signal)
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

/**
 * The fallback: walks, then opens every file and checks it on its descriptor (a regular file, inside the cwd); in a
 * walk anything else (a FIFO, a device, a file swapped for a link) is skipped, named directly it is an error.
 */
async function gatherByReading(
  config: Config,
  target: ResolvedPath,
  single: boolean,
  walked: string[],
  limit: CallLimit,
): Promise<Gathered> {
  const rels = walked.map((rel) => rel.split('/').join(sep))
  type Loaded = FileToSearch | 'skipped' | 'too large'
  const load = async (rel: string): Promise<Loaded> => {
    const real = join(target.real, rel)
    const name = displayPath(target.cwd, join(target.absolute, rel))
    const opened = await openRegular(real, name, target, 'grep').catch((error: Error) => {
      if (single) throw error
      return undefined
    })
    if (!opened) return 'skipped'
    try {
      if (opened.stats.size > config.maxGrepFileBytes) {
        if (single)
          throw new Error(
            `${target.display} is ${formatBytes(opened.stats.size)}, over the ${formatBytes(config.maxGrepFileBytes)} grep limit`,
          )
        return 'too large'
      }
      // A file that grew past the limit since it was measured counts as too large.
      const bytes = await readAll(
        opened.handle,
        config.maxGrepFileBytes,
        () => new Error('grown'),
        opened.stats.size,
      ).catch(() => undefined)
      if (!bytes) return 'too large'
      if (sniff(bytes.subarray(0, SNIFF_BYTES)).kind !== 'text') {
        if (single) throw new Error(`${target.display} is a binary file; grep searches text only`)
        return 'skipped'
      }
      return { name, bytes }
    } finally {
      await opened.handle.close()
    }
  }
  let searched = 0
  const gathered: Gathered = { files: [], searched: async () => searched, tooLarge: 0 }
  // Several files in flight, taken in path order.
  const pending: Promise<Loaded>[] = []
  let next = 0
  const refill = () => {
    while (pending.length < IN_FLIGHT && next < rels.length) {
      const loading = load(rels[next++]!)
      loading.catch(() => undefined)
      pending.push(loading)
    }
  }
  refill()
  while (pending.length) {
    limit.check()
    const loaded = await pending.shift()!
    refill()
    if (loaded === 'too large') gathered.tooLarge++
    else if (loaded !== 'skipped') {
      gathered.files.push(loaded)
      searched++
    }
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
  for (const rel of [...found.keys()].sort(byCodeUnits)) {
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

/** The files `pattern` matches as ripgrep lists them (rg-ignore.ts), sorted; `undefined` where the walk must do it. */
async function globWithRipgrep(
  config: Config,
  target: ResolvedPath,
  pattern: string,
  signal: AbortSignal,
): Promise<string[] | undefined> {
  const rg = await ripgrep(config.ripgrep)
  if (!rg) return undefined
  const matches = await globFilter(pattern, false)
  const listed = await withRipgrepIgnoring(target.real, target.realCwd, target.confined, signal, (flags, stop) =>
    ripgrepFiles(rg, target.real, flags, stop),
  )
  return listed?.filter(matches).sort(byCodeUnits)
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
        const entries =
          (await globWithRipgrep(config, target, args.pattern, limit.signal)) ??
          (
            await walk({
              root: target.real,
              cwd: target.realCwd,
              confined: target.confined,
              patterns: [args.pattern],
              onlyFiles: true,
              signal: limit.signal,
            })
          ).entries.map((entry) => entry.path)
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
