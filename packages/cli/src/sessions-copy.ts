// `keel sessions copy <id>|--all --to postgres://…|files`: sessions from the store in use to another. Each session
// is written whole or not at all (one transaction in PostgreSQL; a file linked into place whole), and one that is
// there already is left alone, so a copy cut short is finished by running it again.
import type { Context } from 'cordis'
import { FileBackend, type SessionBackend } from '@keel/session'
import { isPostgresUrl, PgBackend, redactUrl } from '@keel/store-pg'
import { type Flags, UsageError } from './args.ts'

export function copySessions(ctx: Context, flags: Flags, store: string | undefined, id: string | undefined): string {
  const to = flags.to?.trim()
  if (!to || (to !== 'files' && !isPostgresUrl(to)))
    throw new UsageError('sessions copy needs --to postgres://… (a database) or --to files (the JSONL files)')
  if ((to === 'files' && !store) || (store && to === store))
    throw new UsageError(`sessions copy: the sessions are in ${to === 'files' ? 'the files' : redactUrl(to)} already`)
  const target: SessionBackend = to === 'files' ? new FileBackend() : new PgBackend(to)
  const where = to === 'files' ? 'the JSONL files' : redactUrl(to)
  try {
    const ids = id ? [id] : ctx.sessions.list().map((summary) => summary.id)
    let copied = 0
    const there: string[] = []
    for (const each of ids) {
      if (target.locate(each)) {
        there.push(each)
        continue
      }
      const { header, events } = ctx.sessions.read(each)
      target.write(header, events)
      copied++
    }
    const lines = [`copied ${copied} session${copied === 1 ? '' : 's'} to ${where}`]
    if (there.length) lines.push(`${there.length} already there, left as they are${id ? ` (${id})` : ''}`)
    return lines.join('\n')
  } finally {
    target.dispose?.()
  }
}
