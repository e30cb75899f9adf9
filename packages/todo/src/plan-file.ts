import { backscan } from '@keel/session'
import { settlePlan } from './plan.ts'
import type { TodoItem } from './types.ts'

/** The standing plan of a session file, read from its end: stops at the first `todo/write` or `turn/start`. */
export function standingPlanFromFile(path: string): { todos: TodoItem[] | null; bytesRead: number } {
  const found = backscan(path, settlePlan)
  return { todos: found.value ? found.value.value : null, bytesRead: found.bytesRead }
}
