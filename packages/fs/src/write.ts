import { resolve } from 'node:path'
import { defineTool, Type } from '@keel/tools'
import type { Config } from './config.ts'
import { DETAILS_DIFF_LINES, diffDetails, unifiedDiff } from './diff.ts'
import { countLines, plural } from './format.ts'
import { readAll, replaceFile, withRegular } from './open.ts'
import { type ResolvedPath, refuseProtected, resolvePath } from './paths.ts'
import { SNIFF_BYTES, sniff } from './sniff.ts'

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
      refuseProtected(target, exec)
      const before = await previousText(target, config)
      if (exec.signal.aborted) throw new Error('write aborted before writing')
      const { existed } = await replaceFile(target, args.content, { create: true, signal: exec.signal })
      const bytes = Buffer.byteLength(args.content, 'utf8')
      const text = `${existed ? 'Overwrote' : 'Created'} ${target.display}: ${plural(bytes, 'byte')}, ${plural(countLines(args.content), 'line')}.`
      // The diff is for front ends only; the model wrote the content and is told the counts.
      const old = existed ? before : ''
      if (old === undefined) return text
      return {
        content: [{ type: 'text', text }],
        details: diffDetails(target.display, unifiedDiff(old, args.content), {
          created: !existed,
          maxLines: DETAILS_DIFF_LINES,
          maxLineChars: config.maxLineChars,
        }),
      }
    },
  })
}

/**
 * The file's text before the write, for the diff: undefined when it does not exist, or is not a UTF-8 text file under
 * the edit size limit (then the result has no diff). Never fails the write.
 */
async function previousText(target: ResolvedPath, config: Config): Promise<string | undefined> {
  try {
    return await withRegular(target, 'write', async ({ handle, stats }) => {
      if (stats.size > config.maxEditBytes) return undefined
      const bytes = await readAll(handle, config.maxEditBytes, () => new Error('grew'))
      if (sniff(bytes.subarray(0, SNIFF_BYTES)).kind !== 'text') return undefined
      const text = bytes.toString('utf8')
      return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined
    })
  } catch {
    return undefined
  }
}
