export type TodoStatus = 'pending' | 'in_progress' | 'completed'
export const TODO_STATUSES: readonly TodoStatus[] = ['pending', 'in_progress', 'completed']

/** The whole item: no id, no priority, no activeForm (docs/design/todo-write.md says why). */
export interface TodoItem {
  content: string
  status: TodoStatus
}

/** Who wrote a plan: the model (`todo_write`; the default, and what a write without `source` means) or the person. */
export type TodoSource = 'model' | 'user'

declare module '@keel/session' {
  interface SessionEventMap {
    /**
     * Whole-list snapshot; the latest write wins. Log-only UI state, never on the model surface. `source: 'user'`:
     * the person wrote it (a door's edit, `keel plan`, an approved proposal), inside a turn or between turns.
     */
    'todo/write': { todos: TodoItem[]; source?: TodoSource }
    /** `propose_plan`, during its call in plan mode: the plan as Markdown and the checklist it would run. */
    'plan/proposal': { callId: string; plan: string; todos: TodoItem[] }
    /** The person edited a pending proposal before answering it (the whole draft, latest wins); between turns too. */
    'plan/edit': { callId: string; plan: string; todos: TodoItem[] }
    /** The person approved a proposal, as finally edited, and chose the mode it runs in. */
    'plan/approve': { callId: string; mode: 'ask' | 'auto'; plan: string; todos: TodoItem[] }
    /** The person rejected a proposal, with a sentence the model reads; it keeps planning. */
    'plan/reject': { callId: string; message: string }
  }
  interface ProjectionMap {
    /** The standing plan: null before the first write and after the next `turn/start`. */
    todos: TodoItem[] | null
  }
}
