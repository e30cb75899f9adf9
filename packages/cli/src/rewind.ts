import type { Context } from 'cordis'
import {
  NoSuchTurnError,
  performRewind,
  RewindError,
  previewRewind,
  repositoriesLine,
  turnStartOf,
  type Change,
  type CheckpointService,
  type RewindOutcome,
  type RewindRequest,
  type RewindScope,
} from '@keel/checkpoint'
import { escapeLine, type SessionEvent } from '@keel/session'
import { checkpointsElsewhereWords } from '@keel/door/words'
import { hostName } from '@keel/store-pg'
import { UsageError, type Flags } from './args.ts'

/** `--to 3` / `--at 3`: a turn number, 1 or more. */
function turnFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^[1-9][0-9]*$/.test(value))
    throw new UsageError(`${flag} takes a turn number (1, 2, …), not ${JSON.stringify(value)}`)
  return Number(value)
}

/** The turn's start, a missing turn being a usage error here (exit 2), as a bad flag is. */
function turnStart(events: readonly SessionEvent[], turn: number, id: string): SessionEvent<'turn/start'> {
  try {
    return turnStartOf(events, turn, id)
  } catch (error) {
    if (error instanceof NoSuchTurnError) throw new UsageError(error.message)
    throw error
  }
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
  const scope: RewindScope = both ? 'both' : flags.files ? 'files' : 'conversation'
  const { header, events } = ctx.sessions.read(id)
  if (to !== undefined) turnStart(events, to, id)
  // Checkpoints are git snapshots on the machine that made them: a shared store knows which machine that was.
  const ranOn = ctx.sessions.list().find((summary) => summary.id === id)?.host
  if (ranOn && ranOn !== hostName() && scope !== 'conversation')
    throw new RewindError(
      checkpointsElsewhereWords(
        id,
        escapeLine(ranOn),
        escapeLine(hostName()),
        'fork the conversation here with --conversation',
      ),
    )
  const request: RewindRequest = flags.undo ? { kind: 'undo' } : { kind: 'turn', toTurn: to!, scope }
  const preview = await previewRewind(checkpoints, { id, cwd: header.cwd, events }, request)
  const lines: string[] = []
  let outcome: RewindOutcome
  if (preview.plan) {
    // The rewind is recorded on the original, so it must not be running elsewhere; take its lock first.
    const { session } = ctx.sessions.open(id)
    try {
      outcome = await performRewind({ checkpoints, sessions: ctx.sessions }, preview, { session, force: flags.force })
    } finally {
      ctx.sessions.close(session)
    }
    lines.push(
      outcome.changes.length ? `Files that change (${outcome.changes.length}):` : 'No files change.',
      ...outcome.changes.map(describeChange),
      flags.undo ? 'Undid the last rewind of the files.' : `Rewound the files to the start of turn ${to}.`,
    )
    if (outcome.overwrote.length)
      lines.push(`Overwrote your changes to: ${outcome.overwrote.map(escapeLine).join(', ')}`)
    const kept = repositoriesLine(outcome.repositories.map(escapeLine))
    if (kept) lines.push(kept)
  } else {
    outcome = await performRewind({ checkpoints, sessions: ctx.sessions }, preview)
  }
  if (outcome.fork) lines.push(`The conversation before turn ${to} is session ${outcome.fork}: keel -r ${outcome.fork}`)
  if (preview.plan && !flags.undo) lines.push(`To undo the file changes: keel sessions rewind ${id} --undo`)
  return lines.join('\n')
}
