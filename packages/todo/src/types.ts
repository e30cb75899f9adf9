export type TodoStatus = 'pending' | 'in_progress' | 'completed'
export const TODO_STATUSES: readonly TodoStatus[] = ['pending', 'in_progress', 'completed']

/** The whole item: no id, no priority, no activeForm (docs/design/todo-write.md says why). */
export interface TodoItem {
  content: string
  status: TodoStatus
}

declare module '@keel/session' {
  interface SessionEventMap {
    /** Whole-list snapshot; the latest write wins. Log-only UI state, never on the model surface. */
    'todo/write': { todos: TodoItem[] }
  }
  interface ProjectionMap {
    /** The standing plan: null before the first write and after the next `turn/start`. */
    todos: TodoItem[] | null
  }
}
