// What the model is told about the plan before a request, read from the log: a person's plan carried into a new turn,
// the one plan-mode line, and the change note after the person edited the plan. Each is decided from events alone,
// so a resumed session says the same; a per-session cursor keeps the reading incremental.
import type { Session, SessionEvent } from '@keel/session'
import { describePlanChange, isEmptyChange, planChange } from './edit.ts'
import { openTasks, parseTodoList } from './plan.ts'
import { changeNote, PLAN_MODE_OFF, PLAN_MODE_ON } from './proposal.ts'
import type { TodoItem } from './types.ts'

interface Cursor {
  /** The next seq to read. */
  seq: number
  /** What the model was last told about plan mode. */
  told: 'on' | 'off' | null
  /** A person's `todo/write` came after the model last learned the plan. */
  personSince: boolean
}

const cursors = new WeakMap<Session, Cursor>()

function isNote(event: SessionEvent): boolean {
  return event.type === 'user/message' && event.data.message?.source === 'plan'
}

function noteText(event: SessionEvent<'user/message'>): string {
  return event.data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

function advance(session: Session): Cursor {
  let cursor = cursors.get(session)
  if (!cursor) cursors.set(session, (cursor = { seq: 0, told: null, personSince: false }))
  for (; cursor.seq < session.seq; cursor.seq++) {
    const event = session.at(cursor.seq)!
    if (event.type === 'todo/write') cursor.personSince = event.data.source === 'user'
    else if (isNote(event)) {
      const text = noteText(event as SessionEvent<'user/message'>)
      if (text.endsWith(PLAN_MODE_ON)) cursor.told = 'on'
      else if (text.endsWith(PLAN_MODE_OFF)) cursor.told = 'off'
      cursor.personSince = false
    }
  }
  return cursor
}

/**
 * The plan that stood before the open turn's `turn/start`, when the person wrote it and it still has open tasks: a
 * turn start clears the model's plan, never the person's. Undefined otherwise, or after the turn's first step.
 */
export function carriedPlan(session: Session): TodoItem[] | undefined {
  let start = -1
  let steps = 0
  for (let seq = session.seq - 1; seq >= 0; seq--) {
    const event = session.at(seq)!
    if (event.type === 'step/start') steps++
    if (event.type === 'todo/write') return undefined
    if (event.type === 'turn/start') {
      start = seq
      break
    }
  }
  if (start < 0 || steps !== 1) return undefined
  for (let seq = start - 1; seq >= 0; seq--) {
    const event = session.at(seq)!
    if (event.type === 'turn/start') return undefined
    if (event.type !== 'todo/write') continue
    const todos = parseTodoList(event.data.todos)
    return event.data.source === 'user' && todos && openTasks(todos).length ? todos : undefined
  }
  return undefined
}

/** The plan-mode line the model needs now, if what it was last told differs from `planning`. */
export function modeLine(session: Session, planning: boolean): string | undefined {
  const { told } = advance(session)
  if (planning && told !== 'on') return PLAN_MODE_ON
  if (!planning && told === 'on') return PLAN_MODE_OFF
  return undefined
}

/**
 * The change note, when the person changed the plan since the model last learned it (its own `todo_write`, or the
 * plan standing at the last note it read): what changed, and the plan now.
 */
export function pendingChangeNote(session: Session): string | undefined {
  if (!advance(session).personSince) return undefined
  let current: TodoItem[] | null | undefined
  let known: TodoItem[] | null = null
  let afterNote = false
  for (let seq = session.seq - 1; seq >= 0; seq--) {
    const event = session.at(seq)!
    if (event.type === 'todo/write') {
      const todos = parseTodoList(event.data.todos)
      if (current === undefined) current = todos
      if (afterNote || event.data.source !== 'user') {
        known = todos
        break
      }
    } else if (isNote(event)) afterNote = true
  }
  const change = planChange(known, current ?? null)
  return isEmptyChange(change) ? undefined : changeNote(describePlanChange(change), current ?? [])
}
