import type { Context } from 'cordis'
import { pageOf } from '@keel/door/ask-relay'
import type { PermissionAnswer, PermissionAsk } from '@keel/permissions'
import type { ServerFrame } from './protocol.ts'

/** A denial nobody reads: the ask already ended elsewhere (turn cancelled, answered in another front door). */
const DENY_ONCE: PermissionAnswer = { decision: 'deny', scope: 'once' }

interface Waiting {
  ask: PermissionAsk
  settle(answer: PermissionAnswer): void
}

/**
 * How `keel serve` asks: each ask becomes a `permission/ask` frame to every open tab, addressed to the top-level
 * session the page shows (a subagent's ask surfaces in its parent's page). Any tab answers through
 * `ctx.permissions.answer`, where the first answer wins; the ask leaving (answered, or its turn cancelled) sends
 * `permission/settled` so every tab drops its card. A reloaded page gets the asks still waiting with its tail page.
 */
export class WebAsks {
  private readonly waiting = new Map<string, Waiting>()
  private dispose: (() => void) | undefined

  constructor(
    private readonly ctx: Context,
    private readonly broadcast: (frame: ServerFrame) => void,
  ) {
    this.dispose = ctx.get('permissions')?.setAsker(this.asker)
  }

  /** Whether @keel/permissions is composed (without it nothing is ever asked). */
  get enabled(): boolean {
    return this.dispose !== undefined
  }

  close(): void {
    for (const entry of [...this.waiting.values()]) entry.settle(DENY_ONCE)
    this.dispose?.()
    this.dispose = undefined
  }

  /** The asks waiting for an answer that belong on the page of `sessionId` (its own and its subagents'). */
  pendingFor(sessionId: string): PermissionAsk[] {
    return (this.ctx.get('permissions')?.pending() ?? []).filter((ask) => this.pageOf(ask.sessionId) === sessionId)
  }

  /**
   * Answers an ask from a tab. True when this answer decided it; false when it was already decided (another tab, the
   * turn cancelled) or is unknown.
   */
  answer(sessionId: string, callId: string, answer: PermissionAnswer): boolean {
    // The service aborts the asker's signal when the ask settles, which drops the wait here and tells the tabs.
    return this.ctx.get('permissions')?.answer(sessionId, callId, answer) ?? false
  }

  private readonly asker = (ask: PermissionAsk, signal: AbortSignal): Promise<PermissionAnswer> =>
    new Promise((resolve) => {
      const key = keyOf(ask.sessionId, ask.callId)
      const page = this.pageOf(ask.sessionId)
      const entry: Waiting = {
        ask,
        settle: (answer) => {
          if (this.waiting.get(key) !== entry) return
          this.waiting.delete(key)
          signal.removeEventListener('abort', onAbort)
          this.broadcast({
            type: 'permission/settled',
            sessionId: page,
            askSessionId: ask.sessionId,
            callId: ask.callId,
          })
          resolve(answer)
        },
      }
      const onAbort = () => entry.settle(DENY_ONCE)
      this.waiting.get(key)?.settle(DENY_ONCE)
      this.waiting.set(key, entry)
      if (signal.aborted) {
        onAbort()
        return
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.broadcast({ type: 'permission/ask', sessionId: page, ask })
    })

  private pageOf(sessionId: string): string {
    return pageOf(this.ctx, sessionId)
  }
}

function keyOf(sessionId: string, callId: string): string {
  return `${sessionId}\u0000${callId}`
}
