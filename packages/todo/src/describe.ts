import type { Policy } from './validate.ts'
import { countStatuses } from './plan.ts'
import type { TodoItem } from './types.ts'

const SINGLE = 'Keep exactly one task in_progress while work remains.'
const PARALLEL =
  'Mark a task in_progress when you start it; several may be in_progress only while they truly run at once (for example parallel subagents).'

/** The model-facing description. Only the active-status clause depends on the policy, so text and check agree. */
export function describeTodoWrite(policy: Policy): string {
  return [
    'Keep a visible checklist of your plan for multi-step work (three or more steps, or several requests from the user); skip it for trivial one-step tasks.',
    'Send the whole list on every call: it replaces the previous one. Each task has content and a status: pending, in_progress or completed.',
    policy.allowParallelInProgress ? PARALLEL : SINGLE,
    'Mark a task completed as soon as it is done, not in batches. Update the list alongside real work rather than as a turn of its own.',
  ].join(' ')
}

/** How much of the dropped tasks the result quotes: the report names them, it does not echo a whole old plan back. */
export const DROPPED_QUOTED = 5
export const DROPPED_CLIP = 80

function clip(content: string): string {
  const chars = [...content]
  return chars.length > DROPPED_CLIP ? `${chars.slice(0, DROPPED_CLIP - 1).join('')}…` : content
}

/** The fixed-shape result the model sees. */
export function resultText(todos: readonly TodoItem[], dropped: readonly string[]): string {
  const counts = countStatuses(todos)
  let text = todos.length
    ? `Todo list updated: ${counts.completed} completed, ${counts.in_progress} in progress, ${counts.pending} pending.`
    : 'Todo list cleared.'
  if (dropped.length) {
    const quoted = dropped
      .slice(0, DROPPED_QUOTED)
      .map((c) => JSON.stringify(clip(c)))
      .join(', ')
    const more = dropped.length - DROPPED_QUOTED
    text += `\nRemoved without completing: ${quoted}${more > 0 ? ` and ${more} more` : ''}.`
  }
  return text
}
