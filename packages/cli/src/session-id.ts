import type { Context } from 'cordis'
import { escapeLine } from '@keel/session'
import { UsageError } from './args.ts'

const FULL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * The session a user means by `arg`: a whole id as given, else the one session whose id starts with it. No match
 * leaves the id as typed (the store then says it does not exist); several matches are a usage error listing them.
 */
export function resolveSessionId(ctx: Context, arg: string): string {
  if (FULL_ID.test(arg) || !/^[0-9a-f-]+$/i.test(arg)) return arg
  const matches = ctx.sessions.list().filter((summary) => summary.id.startsWith(arg.toLowerCase()))
  if (matches.length === 1) return matches[0]!.id
  if (matches.length > 1) {
    const lines = matches
      .slice(0, 10)
      .map((summary) => `  ${summary.id}  ${escapeLine(summary.title || '(no prompt)').slice(0, 60)}`)
    throw new UsageError(
      `${matches.length} sessions start with ${arg}; type more of the id:\n${lines.join('\n')}${matches.length > 10 ? `\n  … and ${matches.length - 10} more` : ''}`,
    )
  }
  return arg
}
