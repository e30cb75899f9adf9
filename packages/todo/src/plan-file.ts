import { backscan, type SessionStore } from '@keel/session'
import { settlePlan } from './plan.ts'
import type { TodoItem } from './types.ts'

/** The standing plan of a session file, read from its end: stops at the first `todo/write` or `turn/start`. */
export function standingPlanFromFile(path: string): { todos: TodoItem[] | null; bytesRead: number } {
  const found = backscan(path, settlePlan)
  return { todos: found.value ? found.value.value : null, bytesRead: found.bytesRead }
}

/** The same for a session of any store: the file's tail, or the database's last rows by key. */
export function storedPlanOf(
  sessions: Pick<SessionStore, 'backscan'>,
  id: string,
): { todos: TodoItem[] | null; bytesRead: number } {
  const found = sessions.backscan(id, settlePlan)
  return { todos: found.value ? found.value.value : null, bytesRead: found.bytesRead }
}
