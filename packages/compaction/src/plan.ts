import type { SessionEvent } from '@keel/session'
import { settlePlan, type TodoItem } from '@keel/todo'

/**
 * The plan a summary carries: the standing plan (latest `todo/write` not followed by a `turn/start`, @keel/todo's
 * rule), or — while a turn is open and has not written one yet — the plan that stood when that turn began. The
 * strip a UI shows clears at `turn/start`, but at the first request of a turn the model still has its last plan in
 * its history; compacting that history away must not take the plan with it. Only a plan with an item not yet
 * completed is carried. Returns the `todo/write` seq as well, so the summary can cite its source.
 */
export function planToCarry(events: readonly SessionEvent[]): { todos: TodoItem[]; seq: number } | null {
  let passedEnd = false
  let lookedPastOpenTurn = false
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'turn/end') passedEnd = true
    const settled = settlePlan(event)
    if (!settled) continue
    if (event.type === 'turn/start' && !passedEnd && !lookedPastOpenTurn) {
      // The open turn has written nothing yet: what stood before it is what the model last planned.
      lookedPastOpenTurn = true
      continue
    }
    const todos = settled.value
    if (!todos?.some((todo) => todo.status !== 'completed')) return null
    return { todos, seq: event.seq }
  }
  return null
}
