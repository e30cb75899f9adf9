import { resolve } from 'node:path'
import { Type } from 'typebox'
import { defineTool } from '@keel/tools'
import type { Config } from './config.ts'
import { countLines, plural } from './format.ts'
import { replaceFile } from './open.ts'
import { resolvePath } from './paths.ts'

export const WriteParameters = Type.Object(
  {
    path: Type.String({ description: 'File path, relative to the working directory or absolute.' }),
    content: Type.String({ description: 'The complete new content of the file.' }),
  },
  { additionalProperties: false },
)

export function writeTool(config: Config) {
  return defineTool({
    name: 'write',
    description:
      'Create or overwrite a file with the given content, creating parent directories. Prefer edit for changes to an existing file.',
    parameters: WriteParameters,
    access: (args, cwd) => ({ kind: 'write', paths: [resolve(cwd, args.path)] }),
    presentCall: (args) => ({
      title: `Write ${args.path}`,
      kind: 'edit',
      rawInput: args,
      locations: [{ path: args.path }],
    }),
    async execute(args, exec) {
      const target = await resolvePath(args.path, exec, config)
      if (exec.signal.aborted) throw new Error('write aborted before writing')
      const { existed } = await replaceFile(target, args.content, { create: true, signal: exec.signal })
      const bytes = Buffer.byteLength(args.content, 'utf8')
      return `${existed ? 'Overwrote' : 'Created'} ${target.display}: ${plural(bytes, 'byte')}, ${plural(countLines(args.content), 'line')}.`
    },
  })
}
