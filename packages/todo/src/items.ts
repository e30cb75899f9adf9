// A todo list read from JSON (a projection, a tool call's arguments, a log event): the one shape check, browser-safe
// like plan.ts, which re-exports it.
import { TODO_STATUSES, type TodoItem, type TodoStatus } from './types.ts'

/** A value read from JSON is a todo item: a string `content` and a known `status` (extra keys are ignored). */
export function isTodoItem(value: unknown): value is TodoItem {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false
  const { content, status } = value as Record<string, unknown>
  return typeof content === 'string' && TODO_STATUSES.includes(status as TodoStatus)
}

/** A list read from JSON (a projection value, a tool call's arguments): the items, copied, or null unless every one is well formed. */
export function parseTodoList(value: unknown): TodoItem[] | null {
  if (!Array.isArray(value) || !value.every(isTodoItem)) return null
  return value.map(({ content, status }) => ({ content, status }))
}
