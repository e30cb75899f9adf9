import type { ReactNode } from 'react'
import type { TodoItem } from '../plan.ts'
import { StatusGlyph } from './StatusGlyph.tsx'

/** One line per item; content is plain text (React escapes it), never markup. `actions` adds controls to each line. */
export function TodoList({
  todos,
  compact = false,
  actions,
}: {
  todos: readonly TodoItem[]
  compact?: boolean
  actions?: (todo: TodoItem, index: number) => ReactNode
}) {
  return (
    <ul className={compact ? 'todo-list compact' : 'todo-list'}>
      {todos.map((todo, index) => (
        <li key={`${index}:${todo.content}`} className="todo-item" data-status={todo.status} data-testid="todo-item">
          <StatusGlyph status={todo.status} />
          <span className="todo-content">{todo.content}</span>
          {actions?.(todo, index)}
        </li>
      ))}
    </ul>
  )
}
