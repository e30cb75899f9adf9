// Denials are results of a headless run: every call the permission policy refused, in the main session or a
// subagent's, read from the log's permission/decision events (print mode has no one to ask, so an ask is a denial).
import { declinedReason, hostRefusal } from '@keel/permissions'
import { textOf, type Session, type SessionEvent } from '@keel/session'

export interface Denial {
  tool: string
  /** What the call would have done, in the words the person would have been asked in. */
  summary: string
  /** Why it was refused, and how to let it run. */
  reason: string
  /** The rule that refused it, when a rule did. */
  rule?: string
  /** The subagent's session, when a subagent's call was refused. */
  sessionId?: string
  /** The host, when a sandboxed command was refused a host rather than the call refused. */
  host?: string
}

/** Collects the denials of one agent's session and of the sessions its subagents open. */
export class Denials {
  readonly list: Denial[] = []
  private readonly sessions: Set<string>
  private readonly calls = new Map<string, { name: string; arguments: unknown; summary?: string }>()
  private readonly pending = new Map<string, Denial>()
  private readonly refused = new Set<string>()

  constructor(
    private readonly mainSession: string,
    private readonly summarize: (tool: string, args: unknown) => string,
  ) {
    this.sessions = new Set([mainSession])
  }

  /**
   * Feeds one log event of any session. Returns whether the session is this run's (the agent's, or a subagent's
   * under it); events of other sessions are ignored.
   */
  observe(session: Session, event: SessionEvent): boolean {
    const parent = session.header.parent?.sessionId
    if (!this.sessions.has(session.id)) {
      if (!parent || !this.sessions.has(parent)) return false
      this.sessions.add(session.id)
    }
    const key = `${session.id}\u0000${'callId' in event.data ? String(event.data.callId) : ''}`
    if (event.type === 'tool/call') {
      this.calls.set(key, { name: event.data.name, arguments: event.data.arguments })
    } else if (event.type === 'permission/request') {
      const call = this.calls.get(key)
      if (call) call.summary = event.data.summary
    } else if (event.type === 'permission/decision' && event.data.decision === 'deny' && event.data.host) {
      // The call ran; one of the hosts its command reached was refused (its result is the command's output).
      const call = this.calls.get(key)
      this.list.push({
        tool: call?.name ?? 'unknown',
        summary: `network: ${event.data.host}`,
        reason: hostRefusal(event.data.host),
        host: event.data.host,
        ...(session.id !== this.mainSession ? { sessionId: session.id } : {}),
      })
    } else if (event.type === 'permission/decision' && event.data.decision === 'deny') {
      const call = this.calls.get(key)
      const tool = call?.name ?? 'unknown'
      const denial: Denial = {
        tool,
        summary: call?.summary ?? (call ? this.summarize(tool, call.arguments) : ''),
        reason: event.data.interrupted ? 'the session was interrupted before anyone answered' : '',
        ...(event.data.rule ? { rule: event.data.rule } : {}),
        ...(session.id !== this.mainSession ? { sessionId: session.id } : {}),
      }
      this.list.push(denial)
      this.pending.set(key, denial)
      this.refused.add(key)
    } else if (event.type === 'tool/result') {
      const denial = this.pending.get(key)
      if (denial) {
        this.pending.delete(key)
        const text = textOf(event.data.content)
        denial.reason = declinedReason(text) ?? (text.replace(/^Error: /, '') || denial.reason)
      }
    }
    return true
  }

  /** Whether this call was refused (its result is a denial's reason). */
  has(session: Session, callId: string): boolean {
    return this.refused.has(`${session.id}\u0000${callId}`)
  }
}
