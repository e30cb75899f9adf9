// `keel sessions export <id> --markdown | --html [-o file]`: the door layer's export (`@keel/door/export`) of one
// session, its subagents read from their own logs.
import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import { type ExportFormat, exportFromStore } from '@keel/door/export'
import { escapeLine } from '@keel/session/text'
import type { Flags } from './args.ts'
import { workingDirectory } from './args.ts'

/** The document on standard output, or a one-line receipt when `-o` named a file. */
export function exportCommand(ctx: Context, flags: Flags, id: string, format: ExportFormat): string {
  const text = exportFromStore(ctx.sessions, id, format)
  if (!flags.output) return text.trimEnd()
  const path = resolve(workingDirectory(flags), flags.output)
  writeFileSync(path, text)
  return `Wrote ${format === 'html' ? 'HTML' : 'Markdown'} of session ${escapeLine(id)} to ${escapeLine(path)}`
}
