import { mkdir, stat, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { resolve } from 'node:path'
import { Type } from 'typebox'
import { defineTool } from '@keel/tools'
import type { Config } from './config.ts'
import { countLines, plural } from './format.ts'
import { resolvePath } from './paths.ts'

export const WriteParameters = Type.Object({
  path: Type.String({ description: 'File path, relative to the working directory or absolute.' }),
  content: Type.String({ description: 'The complete new content of the file.' }),
}, { additionalProperties: false })

export function writeTool(config: Config) {
  return defineTool({
    name: 'write',
    description: 'Create or overwrite a file with the given content, creating parent directories. Prefer edit for changes to an existing file.',
    parameters: WriteParameters,
    access: (args, cwd) => ({ kind: 'write', paths: [resolve(cwd, args.path)] }),
    presentCall: (args) => ({ title: `Write ${args.path}`, kind: 'edit', rawInput: args, locations: [{ path: args.path }] }),
    async execute(args, exec) {
      const target = await resolvePath(args.path, exec, config)
      const before = await stat(target.absolute).catch(() => undefined)
      if (before?.isDirectory()) throw new Error(`${target.display} is a directory`)
      if (exec.signal.aborted) throw new Error('write aborted before writing')
      await mkdir(dirname(target.absolute), { recursive: true })
      await writeFile(target.absolute, args.content, 'utf8')
      const bytes = Buffer.byteLength(args.content, 'utf8')
      return `${before ? 'Overwrote' : 'Created'} ${target.display}: ${plural(bytes, 'byte')}, ${plural(countLines(args.content), 'line')}.`
    },
  })
}
