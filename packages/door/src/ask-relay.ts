// Approvals across machines. With a shared session store (PostgreSQL), each ask this process waits for is written to
// the store, so a page on another machine shows it and may answer; that answer comes back through the store and is
// applied here, through `ctx.permissions.answer`, where the first answer wins whoever gave it (this process's own
// door, or the other machine). Only this process decides and logs its sessions' asks; the store carries questions
// and answers, never decisions.
import type { Context } from 'cordis'
import { isPermissionAnswer } from '@keel/permissions'
import { errorLine } from '@keel/session'
import { feedOf, type StoredAsk } from '@keel/store-pg'

/** The top-level session whose page shows asks of `sessionId`: follows the parent links of live sessions. */
export function pageOf(ctx: Context, sessionId: string): string {
  let id = sessionId
  for (let hops = 0; hops < 16; hops++) {
    const parent = ctx.sessions.get(id)?.header.parent?.sessionId
    if (!parent) return id
    id = parent
  }
  return id
}

/** Starts relaying this process's asks through the store; a no-op over the JSONL files or without permissions. */
export function relayAsks(ctx: Context): () => void {
  const permissions = ctx.get('permissions')
  const feed = feedOf(ctx.sessions)
  if (!permissions || !feed) return () => {}
  /** The asks this process published and has not settled, by session. */
  const published = new Map<string, Set<string>>()
  const warn = (error: unknown) =>
    ctx.emit(ctx, 'internal/warning', `the approval relay through the session store failed: ${errorLine(error)}`)
  const settle = (sessionId: string, callId: string, taken?: boolean) => {
    const calls = published.get(sessionId)
    if (!calls?.delete(callId)) return
    if (!calls.size) published.delete(sessionId)
    try {
      feed.settleAsk(sessionId, callId, taken)
    } catch (error) {
      warn(error)
    }
  }
  /** A remote answer to one of ours: applied here, where the first answer wins; the row says whether it did. */
  const apply = (row: StoredAsk) => {
    if (row.host !== feed.self.host || row.pid !== feed.self.pid || row.settled || !row.answer) return
    if (!published.get(row.sessionId)?.has(row.callId)) return
    const taken = isPermissionAnswer(row.answer) && permissions.answer(row.sessionId, row.callId, row.answer)
    settle(row.sessionId, row.callId, taken)
  }
  const disposers: (() => void)[] = [
    ctx.on('permission/ask', (ask) => {
      try {
        feed.putAsk(ask.sessionId, ask.callId, pageOf(ctx, ask.sessionId), { ...ask })
        const calls = published.get(ask.sessionId) ?? new Set()
        calls.add(ask.callId)
        published.set(ask.sessionId, calls)
      } catch (error) {
        warn(error)
      }
    }),
    // The ask left the waiting set: decided (here or through the store), or its turn ended (cancelled).
    ctx.on('session/event', (session, event) => {
      if (!published.has(session.id)) return
      if (event.type === 'permission/decision') settle(session.id, event.data.callId)
      else if (event.type === 'turn/end')
        for (const callId of [...published.get(session.id)!]) settle(session.id, callId)
    }),
  ]
  try {
    disposers.push(
      feed.subscribe({
        ask: (sessionId, callId) => {
          if (!published.get(sessionId)?.has(callId)) return
          const row = feed.ask(sessionId, callId)
          if (row) apply(row)
        },
        // Answers written while the connection was down were not announced: they are read now.
        resumed: () => {
          for (const row of feed.answeredAsks()) apply(row)
        },
      }),
    )
  } catch (error) {
    warn(error)
  }
  return () => {
    for (const dispose of disposers.splice(0)) dispose()
  }
}
