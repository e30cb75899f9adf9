// The standing-plan rule and what the surfaces say about a plan, in one module every surface imports: print mode and
// the TUI through `@keel/todo`, the web client through `@keel/todo/plan`. It must stay browser-safe: no Node
// imports, and from other packages only types and `@keel/session/text` (tests/browser-safe.test.ts bundles it for
// the browser and fails otherwise). The file read (`standingPlanFromFile`) lives in plan-file.ts.
import type { ProjectionDefinition, SessionEvent } from '@keel/session'
import { escapeLine } from '@keel/session/text'
import type { TodoItem } from './types.ts'

export * from './types.ts'

/**
 * The one rule every surface uses: the standing plan is the latest `todo/write` not followed by a later
 * `turn/start`. `turn/end` keeps it, so a finished turn still shows its plan until the next one begins.
 */
export function settlePlan(event: SessionEvent): { value: TodoItem[] | null } | undefined {
  if (event.type === 'todo/write') return { value: event.data.todos as TodoItem[] }
  if (event.type === 'turn/start') return { value: null }
  return undefined
}

/** Forward fold, for full-log consumers. */
export function applyPlan(state: TodoItem[] | null, event: SessionEvent): TodoItem[] | null {
  if (event.type === 'todo/write') return event.data.todos as TodoItem[]
  if (event.type === 'turn/start') return state === null ? state : null
  return state
}

export function standingPlan(events: readonly SessionEvent[]): TodoItem[] | null {
  return standingPlanAt(events.length, (seq) => events[seq]!)
}

/** The same rule over a live session, walking back from its end without copying the log. */
export function standingPlanOf(session: {
  readonly seq: number
  at(seq: number): SessionEvent | undefined
}): TodoItem[] | null {
  return standingPlanAt(session.seq, (seq) => session.at(seq)!)
}

function standingPlanAt(length: number, at: (seq: number) => SessionEvent): TodoItem[] | null {
  for (let seq = length - 1; seq >= 0; seq--) {
    const settled = settlePlan(at(seq))
    if (settled) return settled.value
  }
  return null
}

/** The latest plan ever written, even one a later turn cleared (for `/plan`). */
export function lastPlan(events: readonly SessionEvent[]): TodoItem[] | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'todo/write') return event.data.todos as TodoItem[]
  }
  return null
}

export const todosProjection: ProjectionDefinition<'todos'> = {
  key: 'todos',
  version: 1,
  init: () => null,
  apply: applyPlan,
  settle: settlePlan,
}

export interface PlanSummary {
  done: number
  total: number
  /** The first in-progress item's content, or null. */
  active: string | null
  /** In-progress items beyond the first. */
  moreActive: number
}

export function planSummary(todos: readonly TodoItem[]): PlanSummary {
  let done = 0
  let active: string | null = null
  let activeCount = 0
  for (const todo of todos) {
    if (todo.status === 'completed') done++
    else if (todo.status === 'in_progress') {
      activeCount++
      active ??= todo.content
    }
  }
  return { done, total: todos.length, active, moreActive: Math.max(0, activeCount - 1) }
}

/** Tasks not completed, in order: what a turn that ends now leaves open. */
export function openTasks(todos: readonly TodoItem[] | null): string[] {
  return (todos ?? []).filter((todo) => todo.status !== 'completed').map((todo) => todo.content)
}

/**
 * The notice every surface shows when a turn ends with tasks still open, worded once: `head` is
 * `the turn ended with 2 open tasks`, `names` the tasks quoted (escaped for a terminal, quotes and backslashes as in
 * JSON), `text` the two joined by `: `. A surface may style the parts apart or capitalise the sentence; the words
 * are these.
 */
export function openTasksNotice(open: readonly string[]): { head: string; names: string; text: string } {
  const head = `the turn ended with ${open.length} open task${open.length === 1 ? '' : 's'}`
  const names = open.map((content) => JSON.stringify(escapeLine(content))).join(', ')
  return { head, names, text: `${head}: ${names}` }
}

export function countStatuses(todos: readonly TodoItem[]): { pending: number; in_progress: number; completed: number } {
  const counts = { pending: 0, in_progress: 0, completed: 0 }
  for (const todo of todos) counts[todo.status]++
  return counts
}

export { isTodoItem, parseTodoList } from './items.ts'
export * from './edit.ts'
export * from './proposal.ts'
