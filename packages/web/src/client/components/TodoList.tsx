import type { TodoItem } from '../plan.ts'
import { StatusGlyph } from './StatusGlyph.tsx'

/** One line per item; content is plain text (React escapes it), never markup. */
export function TodoList({ todos, compact = false }: { todos: readonly TodoItem[]; compact?: boolean }) {
  return (
    <ul className={compact ? 'todo-list compact' : 'todo-list'}>
      {todos.map((todo, index) => (
        <li key={`${index}:${todo.content}`} className="todo-item" data-status={todo.status} data-testid="todo-item">
          <StatusGlyph status={todo.status} />
          <span className="todo-content">{todo.content}</span>
        </li>
      ))}
    </ul>
  )
}
