import type { ProjectionDefinition, SessionEvent } from '@keel/session'
import type { SubagentPlan, SubagentPlans } from './types.ts'
import { statusOf } from './types.ts'

const EMPTY: SubagentPlans = Object.freeze({})

/**
 * The pure fold over the parent's log. It knows every child's status and, once a child has ended, its final plan
 * (carried by `subagent/end`). A running child's live plan is in the child's own log; `ctx.subagents.plans()`
 * overlays it.
 */
export function applySubagentPlans(state: SubagentPlans, event: SessionEvent): SubagentPlans {
  switch (event.type) {
    case 'turn/start':
      return state === EMPTY ? state : EMPTY
    case 'subagent/start': {
      const { callId, sessionId, description } = event.data
      return Object.freeze({
        ...state,
        [callId]: Object.freeze({ sessionId, description, status: 'running', todos: null }),
      })
    }
    case 'subagent/end': {
      const run = state[event.data.callId]
      if (!run) return state
      const ended: SubagentPlan = { ...run, status: statusOf(event.data.reason), todos: event.data.todos }
      return Object.freeze({ ...state, [event.data.callId]: Object.freeze(ended) })
    }
    case 'turn/end': {
      // Only a crash-repaired or otherwise torn log gets here with a child still running: it did not finish.
      const open = Object.entries(state).filter(([, run]) => run.status === 'running')
      if (!open.length) return state
      const status = event.data.reason === 'aborted' ? 'aborted' : 'error'
      const next: Record<string, SubagentPlan> = { ...state }
      for (const [callId, run] of open) next[callId] = Object.freeze({ ...run, status })
      return Object.freeze(next)
    }
    default:
      return state
  }
}

export const subagentPlansProjection: ProjectionDefinition<'subagentPlans'> = {
  key: 'subagentPlans',
  version: 1,
  init: () => EMPTY,
  apply: applySubagentPlans,
}
