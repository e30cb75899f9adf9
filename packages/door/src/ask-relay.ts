// Approvals across machines. With a shared session store (PostgreSQL), each ask this process waits for is written to
// the store, so a page on another machine shows it and may answer; that answer comes back through the store and is
// applied here, through `ctx.permissions.answer`, where the first answer wins whoever gave it (this process's own
// door, or the other machine). Only this process decides and logs its sessions' asks; the store carries questions
// and answers, never decisions. An answer from the store is applied only when its proof shows a door holding the
// person's approval key wrote it for this very ask (@keel/store-pg's approval.ts): whatever else can write the table
// (a command the agent runs, with the database's credentials) cannot approve anything.
import type { Context } from 'cordis'
import { isPermissionAnswer } from '@keel/permissions'
import { errorLine, notify } from '@keel/session'
import { approvalKeyPath } from '@keel/session/paths'
import { type ApprovalKey, approvalKey, askDigest, feedOf, provenAnswer, type StoredAsk } from '@keel/store-pg'

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
  /**
   * The asks this process published and has not settled, by session: each call's nonce and question, as this process
   * made and wrote them (the row's copies are only what an answering door signs).
   */
  const published = new Map<string, Map<string, { nonce: string; asked: string }>>()
  const warn = (error: unknown) =>
    ctx.emit(ctx, 'internal/warning', `the approval relay through the session store failed: ${errorLine(error)}`)
  // Made here when missing, before any command runs; read again for each answer, so a key the person copies here
  // counts without a restart.
  const keyPath = approvalKeyPath()
  const readKey = (): ApprovalKey | undefined => {
    try {
      return approvalKey(keyPath)
    } catch (error) {
      notify(ctx, 'permissions', `${errorLine(error)}; answers from other machines are refused`)
      return undefined
    }
  }
  readKey()
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
  /**
   * A remote answer to one of ours: applied here, where the first answer wins, if its proof holds; the row says
   * whether it decided. One without a valid proof is cleared (the ask waits again, everywhere) and named in a notice.
   */
  const apply = (row: StoredAsk) => {
    if (row.host !== feed.self.host || row.pid !== feed.self.pid || row.settled || !row.answer) return
    const mine = published.get(row.sessionId)?.get(row.callId)
    if (!mine) return
    const { nonce, asked } = mine
    const from = row.answeredFrom ?? ''
    const target = { sessionId: row.sessionId, callId: row.callId, nonce, asked, from }
    const key = readKey()
    const fields = key && from ? provenAnswer(key, target, row.answer, row.proof) : undefined
    const answer = fields && { ...fields, answeredOn: from }
    if (!answer || !isPermissionAnswer(answer)) {
      try {
        feed.refuseAnswer(row.sessionId, row.callId, nonce)
      } catch (error) {
        warn(error)
      }
      notify(ctx, 'permissions', refusedWords(row, key))
      return
    }
    settle(row.sessionId, row.callId, permissions.answer(row.sessionId, row.callId, answer))
  }
  const disposers: (() => void)[] = [
    ctx.on('permission/ask', (ask) => {
      try {
        const question = { ...ask }
        const nonce = feed.putAsk(ask.sessionId, ask.callId, pageOf(ctx, ask.sessionId), question)
        const calls = published.get(ask.sessionId) ?? new Map()
        calls.set(ask.callId, { nonce, asked: askDigest(question) })
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
        for (const callId of [...published.get(session.id)!.keys()]) settle(session.id, callId)
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

/** Why an answer from the store was not applied: one line, naming the machine it claims and the key that decides. */
function refusedWords(row: StoredAsk, key: ApprovalKey | undefined): string {
  const from = row.answeredFrom ? `from ${row.answeredFrom.replace(/[^\w.:-]/g, '?').slice(0, 64)} ` : ''
  const tool = typeof row.ask.tool === 'string' ? `${row.ask.tool.replace(/[^\w.-]/g, '?').slice(0, 64)} ` : ''
  const why = key
    ? `it is not signed with the approval key ${key.path} (each machine whose doors answer needs a copy of that file)`
    : 'this machine has no approval key'
  return `refused an answer ${from}to the ${tool}ask ${row.callId.slice(0, 64)} of session ${row.sessionId}: ${why}; the ask still waits`
}
