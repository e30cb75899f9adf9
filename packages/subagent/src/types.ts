import type { TurnEndReason } from '@keel/session'
import type { CostTotal } from '@keel/session/cost'
import type { TodoItem } from '@keel/todo'

/** Where a child stands, as the parent's UI shows it. */
export type SubagentStatus = 'running' | 'completed' | 'error' | 'aborted'
export const SUBAGENT_STATUSES: readonly SubagentStatus[] = ['running', 'completed', 'error', 'aborted']

export interface SubagentPlan {
  /** The child's own session: its log holds its plan, tool calls and answer. */
  sessionId: string
  /** The short label the parent model gave the task. */
  description: string
  status: SubagentStatus
  /** The child's standing plan (null: it never wrote one). */
  todos: TodoItem[] | null
}

/** Child call id → its run, in the order the children started. */
export type SubagentPlans = Readonly<Record<string, SubagentPlan>>

declare module '@keel/session' {
  interface SessionEventMap {
    /** On the parent, between the `task` call's `tool/call` and `tool/result`: a child session now runs the task. */
    'subagent/start': { callId: string; sessionId: string; description: string }
    /**
     * On the parent, before the `task` call's `tool/result`: the child's turn ended. `todos` is the child's standing
     * plan at that moment, so the parent's log alone says how each delegated task finished.
     */
    'subagent/end': {
      callId: string
      sessionId: string
      reason: TurnEndReason
      message?: string
      todos: TodoItem[] | null
      /** Every request of the child's session rolled up (its own subagents included), for the parent's cost. */
      cost?: CostTotal
    }
  }
  interface ProjectionMap {
    /** The children of the current turn (cleared by the next `turn/start`, like the standing plan). */
    subagentPlans: SubagentPlans
  }
}

export function statusOf(reason: TurnEndReason): SubagentStatus {
  if (reason === 'completed' || reason === 'max-tokens') return 'completed'
  if (reason === 'aborted') return 'aborted'
  return 'error'
}
