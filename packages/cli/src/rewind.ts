import type { Context } from 'cordis'
import type { Change, CheckpointService } from '@keel/checkpoint'
import { escapeLine, type SessionEvent } from '@keel/session'
import { UsageError, type Flags } from './args.ts'

/** `--to 3` / `--at 3`: a turn number, 1 or more. */
export function turnFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^[1-9][0-9]*$/.test(value))
    throw new UsageError(`${flag} takes a turn number (1, 2, …), not ${JSON.stringify(value)}`)
  return Number(value)
}

function turnStart(events: readonly SessionEvent[], turn: number, id: string): SessionEvent<'turn/start'> {
  const start = events.find((e): e is SessionEvent<'turn/start'> => e.type === 'turn/start' && e.data.turn === turn)
  if (!start) {
    const last =
      [...events].reverse().find((e): e is SessionEvent<'turn/start'> => e.type === 'turn/start')?.data.turn ?? 0
    throw new UsageError(`session ${id} has no turn ${turn} (it has ${last} turn${last === 1 ? '' : 's'})`)
  }
  return start
}

function describeChange(change: Change): string {
  const path = escapeLine(change.path)
  if (change.status === 'A') return `  recreate ${path}`
  if (change.status === 'D') return `  delete   ${path}`
  return `  restore  ${path}`
}

/** `keel sessions fork <id> [--at <turn>]`: a new session with the events before that turn (all when no --at). */
export function forkSession(ctx: Context, flags: Flags, id: string): string {
  const at = turnFlag(flags.at, '--at')
  const { events } = ctx.sessions.read(id)
  const seq = at === undefined ? undefined : turnStart(events, at, id).seq
  const fork = ctx.sessions.branch(id, seq)
  return `Forked session ${id}${at === undefined ? '' : ` before turn ${at}`} as ${fork}\nContinue it with: keel -r ${fork}`
}

/**
 * `keel sessions rewind <id> --to <turn> [--files | --conversation] [--force]`, or `--undo`: lists the files that
 * change, refuses when the person changed one of them since the agent's last checkpoint (unless --force), restores
 * them, forks the conversation before that turn, and records the rewind on the original session.
 */
export async function rewindSession(ctx: Context, flags: Flags, id: string): Promise<string> {
  const checkpoints: CheckpointService | undefined = ctx.get('checkpoints')
  if (!checkpoints) throw new UsageError('rewind needs @keel/checkpoint, which this composition does not load')
  const to = turnFlag(flags.to, '--to')
  if (flags.undo && to !== undefined) throw new UsageError('use either --to <turn> or --undo, not both')
  if (!flags.undo && to === undefined)
    throw new UsageError(
      'usage: keel sessions rewind <id> --to <turn> [--files | --conversation] [--force] (or --undo)',
    )
  const both = flags.files === flags.conversation
  const files = flags.undo || both || flags.files === true
  const conversation = !flags.undo && (both || flags.conversation === true)
  const { header, events } = ctx.sessions.read(id)
  const start = to === undefined ? undefined : turnStart(events, to, id)
  const lines: string[] = []
  let plan
  if (files) {
    plan = flags.undo
      ? await checkpoints.undoPlan(events, header.cwd, id)
      : await checkpoints.plan(events, header.cwd, to!, id)
    lines.push(
      plan.changes.length ? `Files that change (${plan.changes.length}):` : 'No files change.',
      ...plan.changes.map(describeChange),
    )
  }
  const fork = conversation ? ctx.sessions.branch(id, start!.seq) : undefined
  if (plan) {
    // The rewind is recorded on the original, so it must not be running elsewhere; take its lock first.
    const { session } = ctx.sessions.open(id)
    try {
      await checkpoints.apply(plan, header.cwd, session, { force: flags.force, fork, undo: flags.undo })
    } finally {
      ctx.sessions.close(session)
    }
    lines.push(flags.undo ? 'Undid the last rewind of the files.' : `Rewound the files to the start of turn ${to}.`)
    if (plan.conflicts.length) lines.push(`Overwrote your changes to: ${plan.conflicts.map(escapeLine).join(', ')}`)
  }
  if (fork) lines.push(`The conversation before turn ${to} is session ${fork}: keel -r ${fork}`)
  if (plan && !flags.undo) lines.push(`To undo the file changes: keel sessions rewind ${id} --undo`)
  return lines.join('\n')
}
