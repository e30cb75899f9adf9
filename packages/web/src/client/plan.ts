// Plan helpers for the page. Everything here reads untrusted JSON (model-written tool arguments, projection values
// from another package), so every shape is checked and anything unexpected yields null rather than a guess. (The
// summaries in @keel/todo assume validated lists, and importing that package would pull Node code into the bundle.)
import type { TodoItem, TodoStatus } from '@keel/todo'

export type { TodoItem, TodoStatus }

const STATUSES: readonly TodoStatus[] = ['pending', 'in_progress', 'completed']

function isTodoItem(value: unknown): value is TodoItem {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false
  const { content, status } = value as Record<string, unknown>
  return typeof content === 'string' && STATUSES.includes(status as TodoStatus)
}

/** A list of well-formed items, or null. */
export function parseTodoList(value: unknown): TodoItem[] | null {
  if (!Array.isArray(value) || !value.every(isTodoItem)) return null
  return value.map(({ content, status }) => ({ content, status }))
}

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

function countTodos(todos: readonly TodoItem[]): Record<TodoStatus, number> {
  const counts: Record<TodoStatus, number> = { pending: 0, in_progress: 0, completed: 0 }
  for (const todo of todos) counts[todo.status]++
  return counts
}

/** `1 completed · 2 in progress · 1 pending`, leaving out statuses nobody has. */
export function countsLabel(todos: readonly TodoItem[]): string {
  const counts = countTodos(todos)
  const parts: string[] = []
  if (counts.completed) parts.push(`${counts.completed} completed`)
  if (counts.in_progress) parts.push(`${counts.in_progress} in progress`)
  if (counts.pending) parts.push(`${counts.pending} pending`)
  return parts.join(' · ')
}

/** One line of text: the page shows item content in single-line slots. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

export interface RowSummary {
  /** `N/M completed` plus ` · <first active item>` when one is named. */
  summary: string
  /** `+n` for further active items, kept apart so it never gets cut off with the summary; null when none. */
  suffix: string | null
}

/** The `todo_write` row's summary. An error row (a rejected write) keeps the summary but drops the suffix. */
export function todoRowSummary(todos: readonly TodoItem[], isError = false): RowSummary {
  const counts = countTodos(todos)
  const active = todos.filter((todo) => todo.status === 'in_progress')
  const named = active.length ? oneLine(active[0]!.content) : ''
  const summary = `${counts.completed}/${todos.length} completed${named ? ` · ${named}` : ''}`
  const extra = named ? active.length - 1 : 0
  return { summary, suffix: extra > 0 && !isError ? `+${extra}` : null }
}

/** A delegated task's run as the page shows it under the `task` row. */
export interface SubagentRun {
  sessionId?: string
  description?: string
  status?: string
  todos: TodoItem[] | null
}

/**
 * The `subagentPlans` projection (call id → run) as far as it can be read: entries whose `todos` is a valid list or
 * null are kept, a bare list is taken as the todos; anything else is skipped.
 */
export function parseSubagentPlans(value: unknown): Record<string, SubagentRun> {
  const out: Record<string, SubagentRun> = {}
  if (!value || typeof value !== 'object' || Array.isArray(value)) return out
  for (const [callId, entry] of Object.entries(value as Record<string, unknown>)) {
    const run = parseRun(entry)
    if (run) out[callId] = run
  }
  return out
}

export function parseRun(entry: unknown): SubagentRun | null {
  if (Array.isArray(entry)) {
    const todos = parseTodoList(entry)
    return todos ? { todos } : null
  }
  if (!entry || typeof entry !== 'object') return null
  const record = entry as Record<string, unknown>
  const todos = record.todos === null || record.todos === undefined ? null : parseTodoList(record.todos)
  if (todos === null && record.todos !== null && record.todos !== undefined) return null
  const run: SubagentRun = { todos }
  if (typeof record.sessionId === 'string') run.sessionId = record.sessionId
  if (typeof record.description === 'string') run.description = record.description
  if (typeof record.status === 'string') run.status = record.status
  return run
}
