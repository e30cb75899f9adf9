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
import { walk } from './walk.ts'

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

async function grep(
  config: Config,
  target: ResolvedPath,
  regex: RegExp,
  args: { pattern: string; glob?: string },
  limit: CallLimit,
): Promise<string> {
  const info = await statTarget(target)
  const single = !info.isDirectory()
  let files: string[]
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
    files = found.entries.map((entry) => entry.path.split('/').join(sep))
  } else {
    files = ['']
  }

  // Started on the first batch: a search that finds no file to read never spawns a worker.
  let matcher: RegexMatcher | undefined
  const shown: string[] = []
  let matches = 0
  let matchedFiles = 0
  let tooLarge = 0
  let skipped = 0
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
    for (const rel of files) {
      limit.check()
      const real = join(target.real, rel)
      const name = displayPath(target.cwd, join(target.absolute, rel))
      // Every file is opened and checked on its descriptor: a regular file, inside the cwd. In a walk anything
      // else (a FIFO, a device, a file swapped for a link) is skipped; named directly, it is an error.
      const opened = await openRegular(real, name, target, 'grep').catch((error: Error) => {
        if (single) throw error
        return undefined
      })
      if (!opened) {
        skipped++
        continue
      }
      try {
        if (opened.stats.size > config.maxGrepFileBytes) {
          if (single)
            throw new Error(
              `${target.display} is ${formatBytes(opened.stats.size)}, over the ${formatBytes(config.maxGrepFileBytes)} grep limit`,
            )
          tooLarge++
          continue
        }
        // A file that grew past the limit since it was measured counts as too large.
        const bytes = await readAll(opened.handle, config.maxGrepFileBytes, () => new Error('grown')).catch(
          () => undefined,
        )
        if (!bytes) {
          tooLarge++
          continue
        }
        if (sniff(bytes.subarray(0, SNIFF_BYTES)).kind !== 'text') {
          if (single) throw new Error(`${target.display} is a binary file; grep searches text only`)
          skipped++
          continue
        }
        batch.push({ name, bytes })
        batchBytes += bytes.length
      } finally {
        await opened.handle.close()
      }
      if (batchBytes >= BATCH_BYTES || batch.length >= BATCH_FILES) await flush()
    }
    await flush()
  } finally {
    void matcher?.close()
  }

  const notes: string[] = []
  if (tooLarge) notes.push(`${plural(tooLarge, 'file')} over ${formatBytes(config.maxGrepFileBytes)} skipped`)
  const noted = notes.length ? `\n(${notes.join('; ')})` : ''
  if (!matches)
    return `No matches for /${args.pattern}/ in ${target.display} (${plural(files.length - skipped - tooLarge, 'file')} searched).${noted}`
  let text = shown.join('\n')
  if (matches > shown.length) {
    text += `\n… ${plural(matches - shown.length, 'more match', 'more matches')} not shown (${matches} in ${plural(matchedFiles, 'file')}); narrow the pattern, path or glob.`
  }
  return text + noted
}

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
        const { entries } = await walk({
          root: target.real,
          cwd: target.realCwd,
          confined: target.confined,
          patterns: [args.pattern],
          onlyFiles: true,
          signal: limit.signal,
        })
        if (!entries.length) return `No files match ${args.pattern} in ${target.display}.`
        const lines = entries
          .slice(0, config.maxEntries)
          .map((entry) => displayPath(target.cwd, join(target.absolute, entry.path.split('/').join(sep))))
        if (entries.length > config.maxEntries)
          lines.push(
            `… ${plural(entries.length - config.maxEntries, 'more file')} not shown (${entries.length} match); narrow the pattern.`,
          )
        return lines.join('\n')
      })
    },
  })
}
