import { isPlanEdit, parseTodoList, type ProposalAnswer, standingPlanOf } from '@keel/todo'
import type { SessionState } from '../session-state.ts'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'

const NOT_LOADED = 'plans are not loaded (add @keel/todo to the composition)'

export const planEdit: Method<'plan.edit'> = (served, params) => {
  const plans = served.ctx.get('plans')
  if (!plans) throw new RpcFailure('unavailable', NOT_LOADED)
  if (!isPlanEdit(params.edit))
    throw new RpcFailure(
      'bad-request',
      'an edit is { op: add, content, index? } | { op: rename, index, content } | { op: move, index, to } | { op: delete, index } | { op: status, index, status }',
    )
  const session = served.agentFor(served.scopedSessionId(params)).session
  const refused = plans.edit(session, params.edit)
  if (refused) throw new RpcFailure('bad-request', refused.error)
  return { todos: standingPlanOf(session) ?? [] }
}

/** The answer as sent, checked field by field (the service checks the plan's rules). */
function answerOf(value: unknown): ProposalAnswer {
  const a = value as Record<string, unknown> | null
  const todos = a?.todos === undefined ? undefined : parseTodoList(a.todos)
  if (todos === null) throw new RpcFailure('bad-request', 'todos must be a list of { content, status }')
  if (a?.plan !== undefined && typeof a.plan !== 'string') throw new RpcFailure('bad-request', 'plan must be text')
  const draft = { ...(typeof a?.plan === 'string' ? { plan: a.plan } : {}), ...(todos ? { todos } : {}) }
  if (a?.kind === 'edit') return { kind: 'edit', ...draft }
  if (a?.kind === 'approve' && (a.mode === 'ask' || a.mode === 'auto'))
    return { kind: 'approve', mode: a.mode, ...draft }
  if (a?.kind === 'reject' && typeof a.message === 'string') return { kind: 'reject', message: a.message }
  throw new RpcFailure(
    'bad-request',
    'an answer is { kind: edit, plan?, todos? } | { kind: approve, mode: ask | auto, plan?, todos? } | { kind: reject, message }',
  )
}

export const planAnswer: Method<'plan.answer'> = async (served, params) => {
  const plans = served.ctx.get('plans')
  if (!plans) throw new RpcFailure('unavailable', NOT_LOADED)
  const answer = answerOf(params.answer)
  const sessionId = served.scopedSessionId(params)
  const agent = served.agentFor(sessionId)
  if (answer.kind !== 'edit' && served.states.of(sessionId).kind !== 'idle')
    throw new RpcFailure('busy', 'a turn or a rewind runs in this session; answer the plan when it ends')
  const answered = await plans.answer(agent, answer)
  if ('error' in answered) throw new RpcFailure('bad-request', answered.error)
  if (answered.turn) {
    // The turn the answer opened is this host's, like a prompt's: the page shows it running, the agent stays held.
    const done = answered.turn.then(() => {})
    const turn: SessionState = { kind: 'turn', done }
    served.states.set(sessionId, turn)
    void done.finally(() => served.states.settle(sessionId, turn, { kind: 'idle' }))
  }
  return { accepted: true }
}
