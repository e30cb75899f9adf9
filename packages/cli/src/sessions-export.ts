// `keel sessions export <id> --markdown | --html [-o file]`: the door layer's export (`@keel/door/export`) of one
// session, its subagents read from their own logs.
import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Context } from 'cordis'
import { type ExportFormat, type ExportSource, exportSession } from '@keel/door/export'
import { escapeLine } from '@keel/session/text'
import type { Flags } from './args.ts'
import { workingDirectory } from './args.ts'

/** A session and its children as the export reads them; a child that cannot be read is named, not fatal. */
export function exportSource(
  ctx: Context,
  id: string,
): { source: ExportSource; child: (id: string) => ExportSource | undefined } {
  const { header, events } = ctx.sessions.read(id)
  const child = (childId: string) => {
    try {
      const read = ctx.sessions.read(childId)
      return { header: read.header, events: read.events }
    } catch {
      return undefined
    }
  }
  return { source: { header, events }, child }
}

/** The document on standard output, or a one-line receipt when `-o` named a file. */
export function exportCommand(ctx: Context, flags: Flags, id: string, format: ExportFormat): string {
  const { source, child } = exportSource(ctx, id)
  const text = exportSession(source, format, { child })
  if (!flags.output) return text.trimEnd()
  const path = resolve(workingDirectory(flags), flags.output)
  writeFileSync(path, text)
  return `Wrote ${format === 'html' ? 'HTML' : 'Markdown'} of session ${escapeLine(id)} to ${escapeLine(path)}`
}
