import { escapeLine } from '@keel/session'
import { countStatuses, planSummary } from './plan.ts'
import type { TodoItem, TodoStatus } from './types.ts'

export const GLYPHS: Record<TodoStatus, string> = { completed: '✓', in_progress: '◐', pending: '○' }

/** `Plan 2/5 · 1 in progress` — the header every text surface uses. */
export function planHeader(todos: readonly TodoItem[]): string {
  const summary = planSummary(todos)
  const active = countStatuses(todos).in_progress
  return `Plan ${summary.done}/${summary.total}${active ? ` · ${active} in progress` : ''}`
}

/** Plain text lines (escaped), one per item. */
export function planLines(todos: readonly TodoItem[]): string[] {
  return todos.map((todo) => `${GLYPHS[todo.status]} ${escapeLine(todo.content)}`)
}

/** A Markdown checklist, for PR descriptions and handoff notes. */
export function planMarkdown(todos: readonly TodoItem[]): string {
  return todos
    .map((todo) => {
      const content = escapeLine(todo.content).replace(/([\\`*_[\]<>])/g, '\\$1')
      return `- [${todo.status === 'completed' ? 'x' : ' '}] ${content}${todo.status === 'in_progress' ? ' _(in progress)_' : ''}`
    })
    .join('\n')
}
