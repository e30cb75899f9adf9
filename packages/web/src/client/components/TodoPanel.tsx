import { useState } from 'react'
import type { PlanEdit } from '@keel/todo/plan'
import { countsLabel, type TodoItem } from '../plan.ts'
import { TodoList } from './TodoList.tsx'

const COLLAPSED_KEY = 'keel.todoPanel.collapsed'

/** Sends the person's edit to the host; resolves to its refusal (the rule named), or undefined when it landed. */
export type EditPlan = (edit: PlanEdit) => Promise<string | undefined>

function initiallyCollapsed(): boolean {
  try {
    return localStorage.getItem(COLLAPSED_KEY) === '1'
  } catch {
    return false
  }
}

/**
 * The standing plan, above the composer. Hidden while no plan stands; the header always shows the counts. With
 * `onEdit` the person edits it: mark done, rename, move up, delete, add. The host applies each edit and the new plan
 * arrives on the log like the model's.
 */
export function TodoPanel({ todos, onEdit }: { todos: readonly TodoItem[]; onEdit?: EditPlan }) {
  const [collapsed, setCollapsed] = useState(initiallyCollapsed)
  const [adding, setAdding] = useState('')
  const [error, setError] = useState<string | null>(null)
  if (!todos.length) return null
  const toggle = () => {
    setCollapsed(!collapsed)
    try {
      localStorage.setItem(COLLAPSED_KEY, collapsed ? '0' : '1')
    } catch {}
  }
  const edit = async (value: PlanEdit) => setError((await onEdit?.(value)) ?? null)
  return (
    <section className="todo-panel" data-testid="todo-panel" aria-label="Plan">
      <button type="button" className="todo-header" aria-expanded={!collapsed} onClick={toggle}>
        <span className="todo-title">Plan</span>
        <span className="todo-counts" data-testid="todo-counts">
          {countsLabel(todos)}
        </span>
        <span className={collapsed ? 'chevron up' : 'chevron'} aria-hidden="true" />
      </button>
      {!collapsed && !onEdit && <TodoList todos={todos} />}
      {!collapsed && onEdit && (
        <>
          <TodoList
            todos={todos}
            actions={(todo, index) => (
              <span className="todo-actions">
                <button
                  type="button"
                  data-testid="todo-done"
                  title={todo.status === 'completed' ? 'Mark pending' : 'Mark done'}
                  onClick={() =>
                    void edit({ op: 'status', index, status: todo.status === 'completed' ? 'pending' : 'completed' })
                  }
                >
                  ✓
                </button>
                <button
                  type="button"
                  data-testid="todo-rename"
                  title="Rename"
                  onClick={() => {
                    const content = window.prompt('Rename the task', todo.content)
                    if (content !== null) void edit({ op: 'rename', index, content })
                  }}
                >
                  ✎
                </button>
                <button
                  type="button"
                  data-testid="todo-up"
                  title="Move up"
                  disabled={index === 0}
                  onClick={() => void edit({ op: 'move', index, to: index - 1 })}
                >
                  ↑
                </button>
                <button
                  type="button"
                  data-testid="todo-delete"
                  title="Delete"
                  onClick={() => void edit({ op: 'delete', index })}
                >
                  ✕
                </button>
              </span>
            )}
          />
          <form
            className="todo-add"
            onSubmit={(event) => {
              event.preventDefault()
              if (!adding.trim()) return
              void edit({ op: 'add', content: adding }).then(() => setAdding(''))
            }}
          >
            <input
              data-testid="todo-add-text"
              aria-label="Add a task"
              placeholder="Add a task"
              value={adding}
              onChange={(event) => setAdding(event.target.value)}
            />
            <button type="submit" data-testid="todo-add">
              Add
            </button>
          </form>
          {error && (
            <div className="notice error" role="alert" data-testid="todo-error">
              {error}
            </div>
          )}
        </>
      )}
    </section>
  )
}
