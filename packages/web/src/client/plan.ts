// Plan helpers for the page. The rules (the standing plan, the open-tasks notice, what a todo item or a subagent
// plan is) come from the packages that own them, through their browser-safe entries; what is here reads untrusted
// JSON (model-written tool arguments, projection values over the wire) into those shapes, so anything unexpected
// yields null rather than a guess.
import { flattenLine } from '@keel/session/text'
import { SUBAGENT_STATUSES, type SubagentPlan, type SubagentStatus } from '@keel/subagent/plans'
import { countStatuses, parseTodoList, type TodoItem, type TodoStatus } from '@keel/todo/plan'

export type { SubagentPlan, TodoItem, TodoStatus }

/** The list in a `todo_write` call's raw arguments, or null when they are not JSON of that shape. */
export function parseTodoArgs(raw: unknown): TodoItem[] | null {
  let args: unknown = raw
  if (typeof raw === 'string') {
    try {
      args = JSON.parse(raw)
    } catch {
      return null
    }
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return null
  return parseTodoList((args as { todos?: unknown }).todos)
}

/** `1 completed · 2 in progress · 1 pending`, leaving out statuses nobody has. */
export function countsLabel(todos: readonly TodoItem[]): string {
  const counts = countStatuses(todos)
  const parts: string[] = []
  if (counts.completed) parts.push(`${counts.completed} completed`)
  if (counts.in_progress) parts.push(`${counts.in_progress} in progress`)
  if (counts.pending) parts.push(`${counts.pending} pending`)
  return parts.join(' · ')
}

export interface RowSummary {
  /** `N/M completed` plus ` · <first active item>` when one is named. */
  summary: string
  /** `+n` for further active items, kept apart so it never gets cut off with the summary; null when none. */
  suffix: string | null
}

/** The `todo_write` row's summary. An error row (a rejected write) keeps the summary but drops the suffix. */
export function todoRowSummary(todos: readonly TodoItem[], isError = false): RowSummary {
  const counts = countStatuses(todos)
  const active = todos.filter((todo) => todo.status === 'in_progress')
  const named = active.length ? flattenLine(active[0]!.content) : ''
  const summary = `${counts.completed}/${todos.length} completed${named ? ` · ${named}` : ''}`
  const extra = named ? active.length - 1 : 0
  return { summary, suffix: extra > 0 && !isError ? `+${extra}` : null }
}

/** The `subagentPlans` projection (call id → plan) as far as it can be read: whole plans are kept, the rest skipped. */
export function parseSubagentPlans(value: unknown): Record<string, SubagentPlan> {
  const out: Record<string, SubagentPlan> = {}
  if (!value || typeof value !== 'object' || Array.isArray(value)) return out
  for (const [callId, entry] of Object.entries(value as Record<string, unknown>)) {
    const plan = parseSubagentPlan(entry)
    if (plan) out[callId] = plan
  }
  return out
}

/** One delegated task's plan read from JSON: the shape @keel/subagent's projection holds, or null. */
export function parseSubagentPlan(entry: unknown): SubagentPlan | null {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return null
  const { sessionId, description, status, todos } = entry as Record<string, unknown>
  if (typeof sessionId !== 'string' || typeof description !== 'string') return null
  if (!SUBAGENT_STATUSES.includes(status as SubagentStatus)) return null
  const list = todos === null ? null : parseTodoList(todos)
  if (list === null && todos !== null) return null
  return { sessionId, description, status: status as SubagentStatus, todos: list }
}
