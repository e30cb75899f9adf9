import type { Session } from './session.ts'
import type { SessionEvent } from './types.ts'

export interface UnansweredCall { callId: string; step: number; name: string; arguments: string; logged: boolean }

export interface OpenTurnState {
  turn: number
  step: number | undefined
  /** Calls the model asked for in this turn that have no result yet, in order; `logged` once `tool/call` was appended. */
  unanswered: UnansweredCall[]
}

/** The turn left open at the end of a log (a crash mid-turn), or undefined when every turn was closed. */
export function findOpenTurn(events: readonly SessionEvent[]): OpenTurnState | undefined {
  let open: OpenTurnState | undefined
  const pending = new Map<string, UnansweredCall>()
  for (const event of events) {
    switch (event.type) {
      case 'turn/start':
        open = { turn: event.data.turn, step: undefined, unanswered: [] }
        pending.clear()
        break
      case 'turn/end':
        open = undefined
        pending.clear()
        break
      case 'step/start':
        if (open) open.step = event.data.step
        break
      case 'step/end':
        if (open) open.step = undefined
        break
      case 'assistant/message':
        for (const block of event.data.message.content) {
          if (block.type === 'tool-call') pending.set(block.id, { callId: block.id, step: event.data.step, name: block.name, arguments: block.arguments, logged: false })
        }
        break
      case 'tool/call': {
        const known = pending.get(event.data.callId)
        pending.set(event.data.callId, { ...(known ?? { callId: event.data.callId, step: event.data.step, name: event.data.name, arguments: event.data.arguments }), logged: true })
        break
      }
      case 'tool/result':
        pending.delete(event.data.callId)
        break
    }
  }
  if (open) open.unanswered = [...pending.values()]
  return open
}

export const INTERRUPTED_RESULT = 'Error: the session was interrupted before this tool call finished; its outcome is unknown.'

/**
 * Closes a turn left open by a crash: an error result for every call the model asked for and never got an answer
 * to (so the next request is well formed), `step/end`, then `turn/end { interrupted }`.
 */
export function closeOpenTurn(session: Session): boolean {
  const open = findOpenTurn(session.events)
  if (!open) return false
  for (const call of open.unanswered) {
    if (open.step === undefined) session.append('step/start', { turn: open.turn, step: (open.step = call.step) })
    if (!call.logged) session.append('tool/call', { turn: open.turn, step: call.step, callId: call.callId, name: call.name, arguments: call.arguments })
    session.append('tool/result', {
      turn: open.turn, step: call.step, callId: call.callId, isError: true,
      content: [{ type: 'text', text: INTERRUPTED_RESULT }],
    }, { surfaceOp: { op: 'append' } })
  }
  if (open.step !== undefined) session.append('step/end', { turn: open.turn, step: open.step })
  session.append('turn/end', { turn: open.turn, reason: 'interrupted' })
  return true
}
