// Works on whole events: a torn last line was already dropped by file.ts before these run.
import type { Session } from './session.ts'
import type { SessionEvent } from './types.ts'

export interface UnansweredCall {
  callId: string
  step: number
  name: string
  arguments: string
  logged: boolean
  /** A `permission/request` (from @keel/permissions) was logged for it and never decided: the call never ran. */
  awaitingPermission?: boolean
}

export interface OpenTurnState {
  turn: number
  /** The step left open, if any. */
  step: number | undefined
  /** The highest step number the open turn has started (0 before its first step). */
  lastStep: number
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
        open = { turn: event.data.turn, step: undefined, lastStep: 0, unanswered: [] }
        pending.clear()
        break
      case 'turn/end':
        open = undefined
        pending.clear()
        break
      case 'step/start':
        if (open) {
          open.step = event.data.step
          open.lastStep = Math.max(open.lastStep, event.data.step)
        }
        break
      case 'step/end':
        if (open) open.step = undefined
        break
      case 'assistant/message':
        for (const block of event.data.message.content) {
          if (block.type === 'tool-call')
            pending.set(block.id, {
              callId: block.id,
              step: event.data.step,
              name: block.name,
              arguments: block.arguments,
              logged: false,
            })
        }
        break
      case 'tool/call':
        pending.set(event.data.callId, {
          callId: event.data.callId,
          step: event.data.step,
          name: event.data.name,
          arguments: event.data.arguments,
          logged: true,
        })
        break
      case 'tool/result':
        pending.delete(event.data.callId)
        break
      default: {
        // Permission events belong to @keel/permissions; only their call ids are read here, as plain data.
        const type = event.type as string
        const callId = (event.data as { callId?: unknown }).callId
        const call = typeof callId === 'string' ? pending.get(callId) : undefined
        if (call && type === 'permission/request') call.awaitingPermission = true
        else if (call && type === 'permission/decision') call.awaitingPermission = false
      }
    }
  }
  if (open) open.unanswered = [...pending.values()]
  return open
}

export const INTERRUPTED_RESULT =
  'Error: the session was interrupted before this tool call finished; its outcome is unknown.'
export const INTERRUPTED_ASK_RESULT =
  'Error: permission to run this call was declined: the session was interrupted while it waited for an answer, so it did not run.'

/**
 * Closes a turn left open by a crash: an error result for every call the model asked for and never got an answer
 * to (so the next request is well formed), `step/end`, then `turn/end { interrupted }`. Every event it appends obeys
 * the dev-mode invariants: calls of the open step are answered in it; calls stranded outside it (only a damaged log
 * has those) are logged again and answered in a new step.
 */
export function closeOpenTurn(session: Session): boolean {
  const open = findOpenTurn(session.events)
  if (!open) return false
  const { turn } = open
  const answer = (step: number, call: UnansweredCall, log: boolean) => {
    if (log)
      session.append('tool/call', { turn, step, callId: call.callId, name: call.name, arguments: call.arguments })
    // A question no one answered before the crash is a denial: say so on the log, and to the model.
    if (call.awaitingPermission && !log) {
      const append = session.append.bind(session) as (type: string, data: unknown) => unknown
      append('permission/decision', { callId: call.callId, decision: 'deny', scope: 'mode', interrupted: true })
    }
    session.append(
      'tool/result',
      {
        turn,
        step,
        callId: call.callId,
        isError: true,
        content: [{ type: 'text', text: call.awaitingPermission ? INTERRUPTED_ASK_RESULT : INTERRUPTED_RESULT }],
      },
      { surfaceOp: { op: 'append' } },
    )
  }
  const current = open.step
  const stranded: UnansweredCall[] = []
  for (const call of open.unanswered) {
    if (current !== undefined && call.step === current) answer(current, call, !call.logged)
    else stranded.push(call)
  }
  if (current !== undefined) session.append('step/end', { turn, step: current })
  if (stranded.length) {
    const step = open.lastStep + 1
    session.append('step/start', { turn, step })
    for (const call of stranded) answer(step, call, true)
    session.append('step/end', { turn, step })
  }
  session.append('turn/end', { turn, reason: 'interrupted' })
  return true
}

/**
 * Calls in closed turns that never got a `tool/result` (the result failed to reach the disk). The log cannot answer
 * them in place; `deriveMessages()` pairs them with an error result. Calls of a turn still open are not listed
 * (closeOpenTurn answers those).
 */
export function unpairedCalls(events: readonly SessionEvent[]): string[] {
  const pending = new Map<string, number>() // callId → turn
  const unpaired: string[] = []
  for (const event of events) {
    if (event.type === 'assistant/message') {
      for (const block of event.data.message.content)
        if (block.type === 'tool-call') pending.set(block.id, event.data.turn)
    } else if (event.type === 'tool/call') {
      pending.set(event.data.callId, event.data.turn)
    } else if (event.type === 'tool/result') {
      pending.delete(event.data.callId)
    } else if (event.type === 'turn/end') {
      for (const [callId, turn] of pending) if (turn === event.data.turn) unpaired.push(callId)
      for (const callId of unpaired) pending.delete(callId)
    }
  }
  return unpaired
}
