import { resolve } from 'node:path'
import { defineTool, type ToolOutput, Type } from '@keel/tools'
import type { Config } from './config.ts'
import { formatBytes, plural } from './format.ts'
import { readLineWindow } from './lines.ts'
import { limited } from './limit.ts'
import { readAll, withRegular } from './open.ts'
import { resolvePath } from './paths.ts'
import { sniffHandle } from './sniff.ts'

export const ReadParameters = Type.Object(
  {
    path: Type.String({ description: 'File path, relative to the working directory or absolute.' }),
    offset: Type.Optional(Type.Integer({ minimum: 1, description: 'First line to read (1-based).' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Number of lines to read.' })),
  },
  { additionalProperties: false },
)

/** `cat -n` layout: the number right-aligned in six columns, then a tab. */
export function numbered(number: number, text: string): string {
  return `${String(number).padStart(6)}\t${text}`
}

export function readTool(config: Config) {
  return defineTool({
    name: 'read',
    description: `Read a file. Text comes back with line numbers (\`cat -n\` style); the numbers are not part of the file. Reads ${config.maxReadLines} lines unless you give offset/limit; lines over ${config.maxLineChars} characters are cut. PNG, JPEG, GIF and WebP files come back as images. Binary files are refused.`,
    parameters: ReadParameters,
    access: (args, cwd) => ({ kind: 'read', paths: [resolve(cwd, args.path)] }),
    concurrencySafe: true,
    presentCall: (args) => ({
      title: `Read ${args.path}${args.offset || args.limit ? ` (${args.offset ? `from line ${args.offset}` : 'from the start'}${args.limit ? `, ${plural(args.limit, 'line')}` : ''})` : ''}`,
      kind: 'read',
      rawInput: args,
      locations: [args.offset ? { path: args.path, line: args.offset } : { path: args.path }],
    }),
    async execute(args, exec): Promise<ToolOutput> {
      const target = await resolvePath(args.path, exec, config)
      return limited('read', exec.signal, config.timeoutMs, (limit) =>
        withRegular(target, 'read', async ({ handle, stats: info }) => {
          const kind = await sniffHandle(handle)
          if (kind.kind === 'image') {
            const tooLarge = () =>
              new Error(
                `${target.display} is a ${formatBytes(info.size)} image, over the ${formatBytes(config.maxImageBytes)} limit for returning images`,
              )
            if (info.size > config.maxImageBytes) throw tooLarge()
            const data = (await readAll(handle, config.maxImageBytes, tooLarge)).toString('base64')
            return {
              content: [
                { type: 'text', text: `Image ${target.display} (${kind.mediaType}, ${formatBytes(info.size)}):` },
                { type: 'image', mediaType: kind.mediaType, data },
              ],
            }
          }
          if (kind.kind === 'binary') {
            throw new Error(
              `${target.display} is a binary file (${formatBytes(info.size)}; ${kind.why}); read returns text and images only — use bash (file, xxd, strings) to inspect it`,
            )
          }
          if (info.size === 0) return `${target.display} is empty.`
          const offset = args.offset ?? 1
          const lineLimit = args.limit ?? config.maxReadLines
          const window = await readLineWindow(handle, {
            offset,
            limit: lineLimit,
            maxLineChars: config.maxLineChars,
            maxChars: config.maxReadChars,
            signal: limit.signal,
            // Counting what follows the window is a courtesy; it must not use up the time the window needs.
            countUntil: Date.now() + config.timeoutMs / 2,
          })
          if (offset > window.totalLines) {
            throw new Error(
              `offset ${offset} is past the end of ${target.display}, which has ${plural(window.totalLines, 'line')}`,
            )
          }
          const out = window.lines.map((line) =>
            numbered(
              line.number,
              line.fullBytes === undefined
                ? line.text
                : `${line.text} … [line cut at ${config.maxLineChars} characters; ${formatBytes(line.fullBytes)} in full]`,
            ),
          )
          const last = window.lines.at(-1)?.number ?? offset - 1
          const remaining = window.totalLines - last
          if (!window.counted) {
            out.push(
              `… more lines follow (the file is too large to count them in time); use offset=${last + 1} to read on.`,
            )
          } else if (remaining > 0) {
            const why =
              window.budgetStop !== undefined
                ? ` (this result reached its ${config.maxReadChars.toLocaleString('en-US')}-character cap)`
                : ''
            out.push(`… ${plural(remaining, 'more line')}${why}; use offset=${last + 1} to read on.`)
          }
          return out.join('\n')
        }),
      )
    },
  })
}
