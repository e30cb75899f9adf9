// What a person does to a plan, and how a change is worded: the edit operations every door offers (the TUI's plan
// panel, the web TodoPanel, `keel plan`), the difference between two plans, and its one wording. Browser-safe (the
// web client imports it through `@keel/todo/plan`): only types from elsewhere, no Node import.
import type { TodoItem, TodoStatus } from './types.ts'

/** One edit a door makes; `index` is 0-based. Applying it gives the whole list a `todo/write` carries. */
export type PlanEdit =
  | { op: 'add'; content: string; index?: number }
  | { op: 'rename'; index: number; content: string }
  | { op: 'move'; index: number; to: number }
  | { op: 'delete'; index: number }
  | { op: 'status'; index: number; status: TodoStatus }

const isIndex = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value)

/** A well-formed edit (a door or `keel plan` passes on what it was sent). */
export function isPlanEdit(value: unknown): value is PlanEdit {
  const v = value as Record<string, unknown> | null
  if (!v || typeof v !== 'object') return false
  switch (v.op) {
    case 'add':
      return typeof v.content === 'string' && (v.index === undefined || isIndex(v.index))
    case 'rename':
      return isIndex(v.index) && typeof v.content === 'string'
    case 'move':
      return isIndex(v.index) && isIndex(v.to)
    case 'delete':
      return isIndex(v.index)
    case 'status':
      return isIndex(v.index) && (v.status === 'pending' || v.status === 'in_progress' || v.status === 'completed')
    default:
      return false
  }
}

/** The list after `edit`, or an error naming what is wrong with the edit itself (the plan's rules are checkTodos'). */
export function applyEdit(todos: readonly TodoItem[], edit: PlanEdit): { todos: TodoItem[] } | { error: string } {
  const list = todos.map((todo) => ({ ...todo }))
  const at = (index: number) =>
    Number.isInteger(index) && index >= 0 && index < list.length
      ? undefined
      : `there is no item ${index + 1} (the plan has ${list.length})`
  switch (edit.op) {
    case 'add': {
      const index = edit.index ?? list.length
      if (!Number.isInteger(index) || index < 0 || index > list.length)
        return { error: `cannot add at ${index + 1} (the plan has ${list.length})` }
      list.splice(index, 0, { content: edit.content, status: 'pending' })
      return { todos: list }
    }
    case 'rename': {
      const bad = at(edit.index)
      if (bad) return { error: bad }
      list[edit.index]!.content = edit.content
      return { todos: list }
    }
    case 'move': {
      const bad = at(edit.index) ?? at(edit.to)
      if (bad) return { error: bad }
      const [item] = list.splice(edit.index, 1)
      list.splice(edit.to, 0, item!)
      return { todos: list }
    }
    case 'delete': {
      const bad = at(edit.index)
      if (bad) return { error: bad }
      list.splice(edit.index, 1)
      return { todos: list }
    }
    case 'status': {
      const bad = at(edit.index)
      if (bad) return { error: bad }
      list[edit.index]!.status = edit.status
      return { todos: list }
    }
  }
}

/** What changed from one plan to the next, by content (items have no ids: a renamed item is one removed, one added). */
export interface PlanChange {
  added: string[]
  removed: string[]
  /** Items whose status changed, with the new status. */
  status: { content: string; status: TodoStatus }[]
  /** The items both plans hold are in another order. */
  reordered: boolean
}

export function planChange(before: readonly TodoItem[] | null, after: readonly TodoItem[] | null): PlanChange {
  const old = new Map((before ?? []).map((todo) => [todo.content, todo.status]))
  const now = new Set((after ?? []).map((todo) => todo.content))
  const added = (after ?? []).filter((todo) => !old.has(todo.content)).map((todo) => todo.content)
  const removed = (before ?? []).filter((todo) => !now.has(todo.content)).map((todo) => todo.content)
  const status = (after ?? [])
    .filter((todo) => old.has(todo.content) && old.get(todo.content) !== todo.status)
    .map(({ content, status }) => ({ content, status }))
  const kept = (before ?? []).map((todo) => todo.content).filter((content) => now.has(content))
  const keptAfter = (after ?? []).map((todo) => todo.content).filter((content) => old.has(content))
  const reordered = kept.some((content, i) => keptAfter[i] !== content)
  return { added, removed, status, reordered }
}

export function isEmptyChange(change: PlanChange): boolean {
  return !change.added.length && !change.removed.length && !change.status.length && !change.reordered
}

const STATUS_WORDS: Record<TodoStatus, string> = {
  completed: 'marked done',
  in_progress: 'started',
  pending: 'marked pending',
}

/**
 * The one wording of a change: `added "a", removed "b", marked done "c", reordered the items`. Quoted as JSON
 * strings (quotes and backslashes escaped); a door escapes for its terminal or page as it does any log text.
 */
export function describePlanChange(change: PlanChange): string {
  const quote = (items: readonly string[]) => items.map((item) => JSON.stringify(item)).join(', ')
  const parts: string[] = []
  if (change.added.length) parts.push(`added ${quote(change.added)}`)
  if (change.removed.length) parts.push(`removed ${quote(change.removed)}`)
  for (const status of ['completed', 'in_progress', 'pending'] as const) {
    const items = change.status.filter((item) => item.status === status).map((item) => item.content)
    if (items.length) parts.push(`${STATUS_WORDS[status]} ${quote(items)}`)
  }
  if (change.reordered) parts.push('reordered the items')
  return parts.join(', ') || 'no change'
}
