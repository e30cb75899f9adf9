import { textOf, type Session, type SessionEvent } from '@keel/session'
import { conflictMessage, RewindError, type CheckpointService, type RewindPlan } from './service.ts'
import type { Change } from './shadow.ts'

// The rewind that every front door runs (`keel sessions rewind`, the TUI's /rewind, the web's "Rewind to here"):
// a preview that lists the files that change and the conflicts, then the rewind itself, which looks again and
// refuses when the files moved since the preview. Front doors differ only in how they ask and show.

/** What a rewind restores: the files and the conversation (a fork before the turn), or one of the two. */
export type RewindScope = 'both' | 'files' | 'conversation'

export const REWIND_SCOPES: readonly RewindScope[] = ['both', 'files', 'conversation']

/** The request: back to the start of a turn, or (files only) undo the session's latest rewind. */
export type RewindRequest = { kind: 'turn'; toTurn: number; scope: RewindScope } | { kind: 'undo' }

/** A turn that began with a person's prompt: what pickers offer. */
export interface TurnPrompt {
  turn: number
  /** The seq of its `turn/start`: a fork holds the events before it. */
  startSeq: number
  /** The seq of the prompt's `user/message`. */
  messageSeq: number
  text: string
}

/** The turn named does not exist in the session (the CLI reports it as a usage error). */
export class NoSuchTurnError extends RewindError {}

/** The rewind would overwrite files the person changed since the agent's last snapshot; nothing was changed. */
export class RewindConflictError extends RewindError {
  constructor(
    readonly conflicts: string[],
    hint: string,
    changedSincePreview = false,
  ) {
    super(conflictMessage(conflicts, hint, changedSincePreview))
  }
}

export interface RewindPreview {
  id: string
  cwd: string
  request: RewindRequest
  /** Where the conversation forks (the turn's `turn/start` seq); absent when the conversation stays. */
  forkBeforeSeq?: number
  /** The files' plan; absent when the files stay. */
  plan?: RewindPlan
}

export interface RewindOutcome {
  /** The fork holding the conversation before the turn, when the conversation was rewound. */
  fork?: string
  /** The files that changed (none when the files stayed). */
  changes: Change[]
  /** The person's changes that a forced rewind overwrote. */
  overwrote: string[]
  /** Nested repositories that differ and were left as they are (see `repositoriesLine`). */
  repositories: string[]
}

/** The one line every door shows for the nested repositories a rewind leaves alone, or undefined for none. */
export function repositoriesLine(paths: readonly string[]): string | undefined {
  if (!paths.length) return undefined
  return `Left as they are (a git repository of their own, whose files Keel does not snapshot): ${paths.join(', ')}`
}

/** The structural part of `ctx.sessions` a rewind needs (so this module does not pin the store's class). */
export interface ForkMaker {
  branch(id: string, beforeSeq?: number): string
}

/** The turns of a log that a person started with a prompt, oldest first, with the prompt's text. */
export function turnPrompts(events: readonly SessionEvent[]): TurnPrompt[] {
  const prompts: TurnPrompt[] = []
  let open: { turn: number; seq: number } | undefined
  for (const event of events) {
    if (event.type === 'turn/start') {
      open = event.data.trigger === 'prompt' ? { turn: event.data.turn, seq: event.seq } : undefined
    } else if (event.type === 'user/message' && open) {
      const source = event.data.message.source ?? 'user'
      if (source === 'user') {
        prompts.push({
          turn: open.turn,
          startSeq: open.seq,
          messageSeq: event.seq,
          text: textOf(event.data.message.content),
        })
      }
      open = undefined
    }
  }
  return prompts
}

/** The `turn/start` of turn `turn`, or a NoSuchTurnError naming how many turns the session has. */
export function turnStartOf(events: readonly SessionEvent[], turn: number, id: string): SessionEvent<'turn/start'> {
  const start = events.find((e): e is SessionEvent<'turn/start'> => e.type === 'turn/start' && e.data.turn === turn)
  if (start) return start
  const last =
    [...events].reverse().find((e): e is SessionEvent<'turn/start'> => e.type === 'turn/start')?.data.turn ?? 0
  throw new NoSuchTurnError(`session ${id} has no turn ${turn} (it has ${last} turn${last === 1 ? '' : 's'})`)
}

/** The turn a log event belongs to: the last `turn/start` at or before `seq`. */
export function turnAt(events: readonly SessionEvent[], seq: number): number | undefined {
  let turn: number | undefined
  for (const event of events) {
    if (event.seq > seq) break
    if (event.type === 'turn/start') turn = event.data.turn
  }
  return turn
}

/**
 * What a rewind would do, without doing it: the files that change and the conflicts (paths the person changed
 * since the agent's last snapshot that it would overwrite). Throws RewindError when the files cannot be rewound
 * (no checkpoints, a missing snapshot) or the turn does not exist.
 */
export async function previewRewind(
  checkpoints: CheckpointService | undefined,
  source: { id: string; cwd: string; events: readonly SessionEvent[] },
  request: RewindRequest,
): Promise<RewindPreview> {
  const { id, cwd, events } = source
  const preview: RewindPreview = { id, cwd, request }
  if (request.kind === 'turn') {
    const start = turnStartOf(events, request.toTurn, id)
    if (request.scope !== 'files') preview.forkBeforeSeq = start.seq
  }
  if (request.kind === 'undo' || request.scope !== 'conversation')
    preview.plan = await planFiles(checkpoints, source, request)
  return preview
}

async function planFiles(
  checkpoints: CheckpointService | undefined,
  source: { id: string; cwd: string; events: readonly SessionEvent[] },
  request: RewindRequest,
): Promise<RewindPlan> {
  if (!checkpoints)
    throw new RewindError('rewinding files needs @keel/checkpoint, which this composition does not load')
  return request.kind === 'undo'
    ? checkpoints.undoPlan(source.events, source.cwd, source.id)
    : checkpoints.plan(source.events, source.cwd, request.toTurn, source.id)
}

/**
 * Does a previewed rewind. The files are planned again first: a conflict that the preview did not show (or any
 * conflict, unless `force`) refuses before anything changes, so a confirm step can never overwrite work it did
 * not list. Then the conversation forks (the fork's id goes on the record), then the files are restored and
 * `checkpoint/restore` is written on `session`, which must be the original, open here (it holds the writer lock;
 * the caller opened it or its agent has it) and idle.
 */
export async function performRewind(
  deps: { checkpoints: CheckpointService | undefined; sessions: ForkMaker },
  preview: RewindPreview,
  options: { session?: Session; force?: boolean; forceHint?: string } = {},
): Promise<RewindOutcome> {
  const { session, force = false, forceHint = 'use --force to rewind anyway' } = options
  let plan: RewindPlan | undefined
  if (preview.plan) {
    if (!session || session.id !== preview.id)
      throw new RewindError(`the files of session ${preview.id} are rewound through that session, open here`)
    plan = await planFiles(deps.checkpoints, { ...preview, events: session.events }, preview.request)
    const confirmed = new Set(force ? preview.plan.conflicts : [])
    const unseen = plan.conflicts.filter((path) => !confirmed.has(path))
    if (unseen.length) throw new RewindConflictError(unseen, forceHint, force)
  }
  const fork = preview.forkBeforeSeq === undefined ? undefined : deps.sessions.branch(preview.id, preview.forkBeforeSeq)
  if (plan && session) {
    await deps.checkpoints!.apply(plan, preview.cwd, session, {
      force: true,
      ...(fork ? { fork } : {}),
      ...(preview.request.kind === 'undo' ? { undo: true } : {}),
    })
  }
  return {
    ...(fork ? { fork } : {}),
    changes: plan?.changes ?? [],
    overwrote: plan?.conflicts ?? [],
    repositories: plan?.repositories ?? [],
  }
}
