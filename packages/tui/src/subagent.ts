import type { Context } from 'cordis'
import type { Session } from '@keel/session'
import { TODO_STATUSES, type TodoItem } from '@keel/todo'
import type { SubagentPlan } from './transcript.ts'

/** The projection @keel/subagent registers on a parent session: `task` call id → the child's plan. */
const SUBAGENT_PLANS = 'subagentPlans'

function isTodo(value: unknown): value is TodoItem {
  const todo = value as TodoItem | null
  return typeof todo?.content === 'string' && (TODO_STATUSES as readonly string[]).includes(todo.status)
}

function asPlan(value: unknown): SubagentPlan | undefined {
  const plan = value as Partial<SubagentPlan> | null | undefined
  if (!plan || typeof plan !== 'object') return undefined
  const todos = Array.isArray(plan.todos) ? plan.todos.filter(isTodo) : []
  return {
    sessionId: typeof plan.sessionId === 'string' ? plan.sessionId : '',
    description: typeof plan.description === 'string' ? plan.description : '',
    status: typeof plan.status === 'string' ? plan.status : 'unknown',
    todos,
  }
}

/**
 * The child plan under a `task` card, when @keel/subagent is loaded. Its service overlays each running child's live
 * plan on the parent's projection (`ctx.subagents.plans(parent)`); without the service the projection alone is
 * read. Read defensively: either may be missing (plugin not loaded), keyed in a Map or a plain object; anything
 * malformed reads as no plan.
 */
export function subagentPlan(ctx: Context, session: Session, callId: string): SubagentPlan | undefined {
  let value: unknown
  try {
    // Typed loosely on purpose: this package does not depend on @keel/subagent.
    const service = ctx.get('subagents') as { plans?: (parent: Session) => unknown } | undefined
    const projections = ctx.get('projections')
    if (typeof service?.plans === 'function') value = service.plans(session)
    else if (projections?.has(SUBAGENT_PLANS))
      value = (projections.get.bind(projections) as (session: Session, key: string) => unknown)(session, SUBAGENT_PLANS)
  } catch {
    return undefined
  }
  if (value instanceof Map) return asPlan(value.get(callId))
  if (value && typeof value === 'object') return asPlan((value as Record<string, unknown>)[callId])
  return undefined
}
