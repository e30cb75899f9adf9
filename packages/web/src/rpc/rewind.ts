import {
  performRewind,
  previewRewind,
  repositoriesLine,
  REWIND_SCOPES,
  turnPrompts,
  type CheckpointService,
  type RewindScope,
  type TurnPrompt,
} from '@keel/checkpoint'
import { checkpointsElsewhereWords } from '@keel/door/words'
import type { SessionEvent, SessionHeader } from '@keel/session'
import type { SessionInfo } from '../protocol.ts'
import type { Served } from '../served.ts'
import type { SessionState } from '../session-state.ts'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'
import { optionalInteger, optionalPaths, type Params } from './params.ts'

export const rewindPreview: Method<'session.rewindPreview'> = async (served, params) => {
  const { id, header, events, prompt, scope } = rewindTarget(served, params)
  const preview = await previewRewind(
    checkpoints(served),
    { id, cwd: header.cwd, events },
    { kind: 'turn', toTurn: prompt.turn, scope },
  )
  return {
    turn: prompt.turn,
    scope,
    ...(preview.plan
      ? {
          files: {
            changes: preview.plan.changes.map(({ status, path }) => ({ status, path })),
            conflicts: [...preview.plan.conflicts],
            ...(preview.plan.repositories.length ? { repositories: repositoriesLine(preview.plan.repositories) } : {}),
          },
        }
      : {}),
    fork: preview.forkBeforeSeq !== undefined,
  }
}

/**
 * Files go back through the session's agent here (it holds the writer lock, and `checkpoint/restore` is written on
 * it), so the session must be idle; a conversation-only rewind just forks, from memory or the file.
 */
export const rewind: Method<'session.rewind'> = async (served, params) => {
  const { id, header, events, prompt, scope } = rewindTarget(served, params)
  const overwrite = optionalPaths(params, 'overwrite')
  const now = served.states.of(id)
  if (now.kind === 'rewinding') throw new RpcFailure('busy', 'a rewind of this session is already running')
  if (now.kind === 'command') throw new RpcFailure('busy', 'a command is running in this session')
  if (now.kind === 'turn' || served.running(id))
    throw new RpcFailure('busy', 'a turn is running in this session; wait for it to end or cancel it')
  const rewinding: SessionState = { kind: 'rewinding', after: now }
  served.states.set(id, rewinding)
  try {
    const session = scope === 'conversation' ? undefined : served.agentFor(id).session
    const preview = await previewRewind(
      checkpoints(served),
      { id, cwd: header.cwd, events: session?.events ?? events },
      { kind: 'turn', toTurn: prompt.turn, scope },
    )
    // The conflicts the person saw and agreed to overwrite; any other one refuses (performRewind looks again).
    if (preview.plan) preview.plan = { ...preview.plan, conflicts: overwrite }
    const outcome = await performRewind({ checkpoints: checkpoints(served), sessions: served.ctx.sessions }, preview, {
      session,
      force: overwrite.length > 0,
      forceHint: 'look at the list again before rewinding',
    })
    let fork: SessionInfo | undefined
    if (outcome.fork) {
      fork = { ...served.infoOfHeader(served.ctx.sessions.read(outcome.fork).header), title: titleOf(prompt, events) }
      served.hub.broadcast({ type: 'session/created', session: fork })
    }
    return {
      turn: prompt.turn,
      ...(fork ? { fork } : {}),
      changed: outcome.changes.length,
      overwrote: outcome.overwrote,
    }
  } finally {
    served.states.settle(id, rewinding, now)
  }
}

/** The session, the prompt and the scope a rewind request names, each checked; the log read once. */
function rewindTarget(
  served: Served,
  params: Params,
): { id: string; header: SessionHeader; events: readonly SessionEvent[]; prompt: TurnPrompt; scope: RewindScope } {
  const id = served.scopedSessionId(params)
  const seq = optionalInteger(params, 'seq', 0, Number.MAX_SAFE_INTEGER)
  if (seq === undefined) throw new RpcFailure('bad-request', 'seq must be the seq of a prompt (a user message)')
  const scope = params.scope
  if (typeof scope !== 'string' || !(REWIND_SCOPES as readonly string[]).includes(scope))
    throw new RpcFailure('bad-request', `scope must be one of ${REWIND_SCOPES.join(', ')}`)
  const { header, events } = served.ctx.sessions.read(id)
  if (header.parent)
    throw new RpcFailure(
      'read-only',
      `session ${id} belongs to a subagent; rewind its parent session ${header.parent.sessionId}`,
    )
  const prompt = turnPrompts(events).find((candidate) => candidate.messageSeq === seq)
  if (!prompt) throw new RpcFailure('bad-request', `seq ${seq} is not a prompt of session ${id}`)
  // Checkpoints are git snapshots on the machine that made them: a shared store knows which machine that was.
  const ranOn = scope === 'conversation' ? undefined : served.remote?.elsewhere(id)
  if (ranOn)
    throw new RpcFailure(
      'conflict',
      checkpointsElsewhereWords(id, ranOn, served.remote!.host, 'rewind the conversation only (it forks here)'),
    )
  return { id, header, events, prompt, scope: scope as RewindScope }
}

function checkpoints(served: Served): CheckpointService | undefined {
  return served.ctx.get('checkpoints')
}

/** A fork's title, as the list would show it: its first prompt (the original's, unless it forked before turn 1). */
function titleOf(prompt: TurnPrompt, events: readonly SessionEvent[]): string {
  const first = turnPrompts(events).find((candidate) => candidate.startSeq < prompt.startSeq)
  return (first?.text ?? '').replace(/\s+/g, ' ').trim().slice(0, 120)
}
