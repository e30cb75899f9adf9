import type { Compaction } from '@keel/compaction'
import type { SessionState } from '../session-state.ts'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'

const MAX_PROMPT_CHARS = 200_000

export const listSessions: Method<'session.list'> = (served) => ({
  sessions: served.ctx.sessions.list(served.all ? undefined : served.cwd).map((summary) => served.info(summary)),
  cwd: served.cwd,
  all: served.all,
})

export const createSession: Method<'session.create'> = (served) => {
  const agent = served.ctx.agents.create({ cwd: served.cwd, model: served.model, fileNow: true })
  served.held.add(agent)
  const session = served.infoOfHeader(agent.session.header)
  served.hub.broadcast({ type: 'session/created', session })
  return { session }
}

export const prompt: Method<'session.prompt'> = (served, params) => {
  const sessionId = served.scopedSessionId(params)
  const text = params.text
  if (typeof text !== 'string' || !text.trim()) throw new RpcFailure('bad-request', 'text must be a non-empty string')
  if (text.length > MAX_PROMPT_CHARS)
    throw new RpcFailure('bad-request', `text is ${text.length} characters; the limit is ${MAX_PROMPT_CHARS}`)
  const kind = params.kind ?? 'steer'
  if (kind !== 'steer' && kind !== 'follow-up')
    throw new RpcFailure('bad-request', `kind must be "steer" or "follow-up", not ${JSON.stringify(kind)}`)
  const now = served.states.of(sessionId)
  if (now.kind === 'rewinding') throw new RpcFailure('busy', 'a rewind of this session is running')
  const agent = served.agentFor(sessionId)
  // While a turn runs the text joins the agent's one queue (every tab and door shares it, in the order sent).
  const sent = agent.send(text, kind)
  if (sent.queued) return { accepted: true, queued: { id: sent.queued.id, kind: sent.queued.kind } }
  // A compaction waiting for the next request is committed by this turn's first one. The session counts as in a
  // turn until the agent is idle, its queued follow-ups' turns included.
  const done = sent.turn
    .then(() => agent.whenIdle())
    .then(
      () => {},
      (error: unknown) => {
        served.ctx.emit(
          served.ctx,
          'internal/warning',
          `web: prompt in ${sessionId} failed: ${(error as Error)?.message ?? error}`,
        )
      },
    )
  const turn: SessionState = { kind: 'turn', done }
  served.states.set(sessionId, turn)
  void done.finally(() => served.states.settle(sessionId, turn, { kind: 'idle' }))
  return { accepted: true }
}

export const cancel: Method<'session.cancel'> = (served, params) => {
  const id = served.scopedSessionId(params)
  const running = served.states.running(id)
  if (running) served.held.get(id)?.cancel()
  return { cancelled: running }
}

export const compact: Method<'session.compact'> = async (served, params) => {
  const compaction: Compaction | undefined = served.ctx.get('compaction')
  if (!compaction)
    throw new RpcFailure('unavailable', 'compaction is not loaded (add @keel/compaction to the composition)')
  const agent = served.agentFor(served.scopedSessionId(params))
  const now = served.states.of(agent.id)
  if (now.kind === 'rewinding') throw new RpcFailure('busy', 'a rewind of this session is running')
  // Mid-turn the compaction runs at the turn's next request; the turn keeps the agent open meanwhile.
  if (now.kind === 'turn') return compaction.compact(agent)
  // An idle compaction is committed at the agent's next request; closing the agent before then would drop it.
  const compacting: SessionState = now.kind === 'compacting' ? now : { kind: 'compacting' }
  served.states.set(agent.id, compacting)
  try {
    const result = await compaction.compact(agent)
    if (result.applied !== 'next-request') served.states.settle(agent.id, compacting, { kind: 'idle' })
    return result
  } catch (error) {
    served.states.settle(agent.id, compacting, { kind: 'idle' })
    throw error
  }
}
