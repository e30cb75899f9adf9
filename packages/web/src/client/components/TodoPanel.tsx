import { useState } from 'react'
import { countsLabel, type TodoItem } from '../plan.ts'
import { TodoList } from './TodoList.tsx'

const COLLAPSED_KEY = 'keel.todoPanel.collapsed'

function initiallyCollapsed(): boolean {
  try {
    return localStorage.getItem(COLLAPSED_KEY) === '1'
  } catch {
    return false
  }
}

/** The standing plan, above the composer. Hidden while no plan stands; the header always shows the counts. */
export function TodoPanel({ todos }: { todos: readonly TodoItem[] }) {
  const [collapsed, setCollapsed] = useState(initiallyCollapsed)
  if (!todos.length) return null
  const toggle = () => {
    setCollapsed(!collapsed)
    try {
      localStorage.setItem(COLLAPSED_KEY, collapsed ? '0' : '1')
    } catch {}
  }
  return (
    <section className="todo-panel" data-testid="todo-panel" aria-label="Plan">
      <button type="button" className="todo-header" aria-expanded={!collapsed} onClick={toggle}>
        <span className="todo-title">Plan</span>
        <span className="todo-counts" data-testid="todo-counts">
          {countsLabel(todos)}
        </span>
        <span className={collapsed ? 'chevron up' : 'chevron'} aria-hidden="true" />
      </button>
      {!collapsed && <TodoList todos={todos} />}
    </section>
  )
}
