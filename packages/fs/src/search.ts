import { readFile, readlink, stat } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { resolve } from 'node:path'
import { Type } from 'typebox'
import { defineTool } from '@keel/tools'
import type { Config } from './config.ts'
import { clip, formatBytes, plural } from './format.ts'
import { cutChars } from './lines.ts'
import { displayPath, resolvePath } from './paths.ts'
import { sniff, SNIFF_BYTES } from './sniff.ts'
import { walk } from './walk.ts'

/** Characters of a matching line grep shows; a longer line is shown around its first match. */
export const GREP_LINE_CHARS = 300

const PathParameter = (what: string) => Type.Optional(Type.String({ description: `${what} (default: the working directory).` }))

export const GrepParameters = Type.Object({
  pattern: Type.String({ description: 'JavaScript regular expression, matched line by line.' }),
  path: PathParameter('File or directory to search'),
  glob: Type.Optional(Type.String({ description: 'Only files matching this glob, e.g. "*.ts" (any depth) or "src/**/*.tsx".' })),
  ignore_case: Type.Optional(Type.Boolean({ description: 'Match case-insensitively.' })),
}, { additionalProperties: false })

export const LsParameters = Type.Object({
  path: PathParameter('Directory to list'),
}, { additionalProperties: false })

export const GlobParameters = Type.Object({
  pattern: Type.String({ description: 'Glob relative to path, e.g. "**/*.ts" or "src/*.{js,jsx}"; ** spans directories.' }),
  path: PathParameter('Directory to search from'),
}, { additionalProperties: false })

function checkGlob(glob: string, what: string): void {
  if (glob.startsWith('/') || glob.split('/').includes('..')) throw new Error(`${what} must be relative and stay inside the searched directory; put the directory in path`)
}

/** The line, or a window of it around the match, within GREP_LINE_CHARS. */
function snippet(line: string, index: number): string {
  if (line.length <= GREP_LINE_CHARS) return line
  const start = Math.max(0, Math.min(index - 100, line.length - GREP_LINE_CHARS))
  const body = cutChars(line.slice(start), GREP_LINE_CHARS)
  return `${start > 0 ? '…' : ''}${body}${start + body.length < line.length ? '…' : ''}`
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
      const info = await stat(target.absolute).catch(() => undefined)
      if (!info) throw new Error(`${target.display} does not exist`)
      let files: string[]
      if (info.isDirectory()) {
        const found = await walk({ root: target.absolute, cwd: target.cwd, patterns: [args.glob ?? '**/*'], onlyFiles: true, baseNameMatch: true })
        files = found.entries.map((entry) => join(target.absolute, entry.path.split('/').join(sep)))
      } else {
        files = [target.absolute]
      }

      const shown: string[] = []
      let matches = 0
      let matchedFiles = 0
      let tooLarge = 0
      let binary = 0
      for (const file of files) {
        if (exec.signal.aborted) throw new Error('grep aborted')
        const size = (await stat(file).catch(() => undefined))?.size
        if (size === undefined) continue
        if (size > config.maxGrepFileBytes) { tooLarge++; continue }
        const bytes = await readFile(file).catch(() => undefined)
        if (!bytes) continue
        if (sniff(bytes.subarray(0, SNIFF_BYTES)).kind !== 'text') { binary++; continue }
        const name = displayPath(target.cwd, file)
        const lines = bytes.toString('utf8').split('\n')
        let hit = false
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i]!.endsWith('\r') ? lines[i]!.slice(0, -1) : lines[i]!
          const match = regex.exec(line)
          if (!match) continue
          hit = true
          matches++
          if (shown.length < config.maxGrepMatches) shown.push(`${name}:${i + 1}: ${snippet(line, match.index)}`)
        }
        if (hit) matchedFiles++
      }

      if (files.length === 1 && !info.isDirectory()) {
        if (tooLarge) throw new Error(`${target.display} is ${formatBytes(info.size)}, over the ${formatBytes(config.maxGrepFileBytes)} grep limit`)
        if (binary) throw new Error(`${target.display} is a binary file; grep searches text only`)
      }
      const notes: string[] = []
      if (tooLarge) notes.push(`${plural(tooLarge, 'file')} over ${formatBytes(config.maxGrepFileBytes)} skipped`)
      const noted = notes.length ? `\n(${notes.join('; ')})` : ''
      if (!matches) return `No matches for /${args.pattern}/ in ${target.display} (${plural(files.length - binary - tooLarge, 'file')} searched).${noted}`
      let text = shown.join('\n')
      if (matches > shown.length) {
        text += `\n… ${plural(matches - shown.length, 'more match', 'more matches')} not shown (${matches} in ${plural(matchedFiles, 'file')}); narrow the pattern, path or glob.`
      }
      return text + noted
    },
  })
}

export function lsTool(config: Config) {
  return defineTool({
    name: 'ls',
    description: 'List a directory: subdirectories (ending in /) first, then files. Respects .gitignore; node_modules and .git are left out.',
    parameters: LsParameters,
    access: (args, cwd) => ({ kind: 'read', paths: [resolve(cwd, args.path ?? '.')] }),
    concurrencySafe: true,
    presentCall: (args) => ({ title: `List ${args.path ?? '.'}`, kind: 'read', rawInput: args, locations: [{ path: args.path ?? '.' }] }),
    async execute(args, exec) {
      const target = await resolvePath(args.path ?? '.', exec, config)
      const info = await stat(target.absolute).catch(() => undefined)
      if (!info) throw new Error(`${target.display} does not exist`)
      if (!info.isDirectory()) throw new Error(`${target.display} is a file, not a directory; use read to see it`)
      const { entries, hidden } = await walk({ root: target.absolute, cwd: target.cwd, patterns: ['*'], onlyFiles: false, deep: 1 })
      const dirs = entries.filter((entry) => entry.kind === 'dir')
      const rest = entries.filter((entry) => entry.kind !== 'dir')
      const lines: string[] = []
      for (const entry of [...dirs, ...rest].slice(0, config.maxEntries)) {
        if (entry.kind === 'dir') lines.push(`${entry.path}/`)
        else if (entry.kind === 'symlink') {
          const to = await readlink(join(target.absolute, entry.path)).catch(() => '?')
          lines.push(`${entry.path} -> ${to}`)
        } else lines.push(entry.path)
      }
      if (entries.length > config.maxEntries) lines.push(`… ${plural(entries.length - config.maxEntries, 'more entry', 'more entries')} not shown; use glob to narrow down.`)
      if (!entries.length) lines.push(`${target.display} is empty.`)
      if (hidden) lines.push(`(${plural(hidden, 'entry', 'entries')} hidden: gitignored, node_modules or .git)`)
      return lines.join('\n')
    },
  })
}

export function globTool(config: Config) {
  return defineTool({
    name: 'glob',
    description: `Find files by name pattern, e.g. "**/*.test.ts". Returns paths sorted by name (at most ${config.maxEntries}). Respects .gitignore; skips node_modules and .git.`,
    parameters: GlobParameters,
    access: (args, cwd) => ({ kind: 'read', paths: [resolve(cwd, args.path ?? '.')] }),
    concurrencySafe: true,
    presentCall: (args) => ({ title: `Glob ${clip(args.pattern)}${args.path ? ` in ${args.path}` : ''}`, kind: 'read', rawInput: args, locations: args.path ? [{ path: args.path }] : [] }),
    async execute(args, exec) {
      checkGlob(args.pattern, 'pattern')
      const target = await resolvePath(args.path ?? '.', exec, config)
      const info = await stat(target.absolute).catch(() => undefined)
      if (!info) throw new Error(`${target.display} does not exist`)
      if (!info.isDirectory()) throw new Error(`${target.display} is a file, not a directory`)
      const { entries } = await walk({ root: target.absolute, cwd: target.cwd, patterns: [args.pattern], onlyFiles: true })
      if (!entries.length) return `No files match ${args.pattern} in ${target.display}.`
      const lines = entries.slice(0, config.maxEntries).map((entry) => displayPath(target.cwd, join(target.absolute, entry.path.split('/').join(sep))))
      if (entries.length > config.maxEntries) lines.push(`… ${plural(entries.length - config.maxEntries, 'more file')} not shown (${entries.length} match); narrow the pattern.`)
      return lines.join('\n')
    },
  })
}
