// Sessions another process runs, over a shared store (PostgreSQL): the host follows them live as that process appends
// (the store announces each committed event; the host reads the new ones by seq and sends them to the tabs as it
// does a local session's), shows their waiting approvals, and hands an answer to the owning process through the
// store, signed with the person's approval key (@keel/door/ask-relay checks the proof and applies it there; the first
// answer wins).
import { resolve } from 'node:path'
import type { PermissionAnswer, PermissionAsk } from '@keel/permissions'
import type { Context } from 'cordis'
import type { SessionEvent, SessionHeader } from '@keel/session'
import { type ApprovalKey, approvalKey, type SessionFeed, type StoredAsk } from '@keel/store-pg'
import type { EventHub } from './events.ts'
import type { HistoryEntry, SessionInfo } from './protocol.ts'
import { RpcFailure } from './rpc/failure.ts'

/** What following needs of the host (served.ts's `Served`). */
interface FollowHost {
  readonly ctx: Context
  readonly hub: EventHub
  readonly all: boolean
  readonly cwd: string
  entry(event: SessionEvent): HistoryEntry
  infoOfHeader(header: SessionHeader): SessionInfo
}

/** How long a remote answer waits for the owning process to take it. */
const ANSWER_WAIT_MS = 15_000
const BATCH = 500

export class RemoteSessions {
  /** The last seq sent to the tabs, per session followed since a tab was connected. */
  private readonly sent = new Map<string, number>()
  private readonly scoped = new Map<string, boolean>()
  private readonly due = new Set<string>()
  private flushing: ReturnType<typeof setImmediate> | undefined
  /** Remote answers waiting for the owner's verdict, by ask. */
  private readonly verdicts = new Map<string, () => void>()
  private readonly dispose: () => void

  constructor(
    private readonly served: FollowHost,
    private readonly feed: SessionFeed,
  ) {
    this.dispose = feed.subscribe({
      event: (id, seq) => this.heard(id, seq),
      ask: (sessionId, callId) => this.askChanged(sessionId, callId),
      resumed: () => {
        // Announcements were lost while the connection was down: every followed session is read on from its seq.
        for (const id of this.sent.keys()) this.due.add(id)
        this.schedule()
      },
    })
  }

  /** This machine's name in the store. */
  get host(): string {
    return this.feed.self.host
  }

  close(): void {
    this.dispose()
    if (this.flushing) clearImmediate(this.flushing)
    for (const wake of this.verdicts.values()) wake()
  }

  /** Where each followed session's log ends, for the hello frame (a reconnected tab repairs a window behind it). */
  followed(): { sessionId: string; lastSeq: number; running: boolean }[] {
    return [...this.sent].map(([sessionId, lastSeq]) => ({ sessionId, lastSeq, running: false }))
  }

  /** The machine that runs (or ran) the session, when it is another one than this. */
  elsewhere(id: string): string | undefined {
    const host = this.feed.whereRuns(id)?.host
    return host !== undefined && host !== this.host ? host : undefined
  }

  /** Whether a turn runs in a session that is not open here: another process holds it and its last turn is open. */
  running(id: string): boolean {
    return this.feed.openOf([id]).has(id) && this.turnOpen(id)
  }

  /** Of `ids` (none open here), those where a turn runs elsewhere. */
  runningOf(ids: readonly string[]): Set<string> {
    const open = this.feed.openOf(ids)
    return new Set([...open].filter((id) => this.turnOpen(id)))
  }

  private turnOpen(id: string): boolean {
    const last = this.served.ctx.sessions.backscan(id, (event) =>
      event.type === 'turn/start' ? true : event.type === 'turn/end' ? false : undefined,
    )
    return last?.value === true
  }

  /** The asks of other processes waiting on the page of `pageId`. */
  pendingFor(pageId: string): PermissionAsk[] {
    return this.feed
      .waitingOn(pageId)
      .filter((row) => !this.mine(row))
      .map((row) => askOf(row))
  }

  /**
   * Answers another process's ask through the store, signed with the person's approval key: refused (false) unless
   * it waits now, unanswered, on a page this host serves; else true once the owner took it, false when its own door
   * (or another answer) decided first. The owner refusing the proof (another key there) is a failure naming the key.
   */
  async answer(sessionId: string, callId: string, answer: PermissionAnswer): Promise<boolean> {
    const row = this.feed.ask(sessionId, callId)
    if (!row?.nonce || this.mine(row) || row.settled || row.answer || !this.inScope(row.pageId)) return false
    const nonce = row.nonce
    const signing = this.approvalKey()
    const fields = {
      decision: answer.decision,
      scope: answer.scope,
      ...(answer.file !== undefined ? { file: answer.file } : {}),
      ...(answer.message !== undefined ? { message: answer.message } : {}),
    }
    // Signed over the question as this host read it, which is what its pages show (`askOf`).
    if (!this.feed.answer(row, fields, this.host, signing)) return false
    const key = keyOf(sessionId, callId)
    return new Promise<boolean>((done, fail) => {
      const finish = (value: boolean | Error) => {
        clearTimeout(timer)
        if (this.verdicts.get(key) === check) this.verdicts.delete(key)
        if (value instanceof Error) fail(value)
        else done(value)
      }
      const check = () => {
        let now: StoredAsk | undefined
        try {
          now = this.feed.ask(sessionId, callId)
        } catch (error) {
          finish(error as Error)
          return
        }
        if (!now || now.settled || now.nonce !== nonce) finish(now?.settled === true && now.taken === true)
        // Still the same ask, waiting, and our answer gone: the owner cleared it, its proof did not hold there.
        else if (!now.answer)
          finish(
            new RpcFailure(
              'forbidden',
              `the process running session ${sessionId} on ${row.host} refused the answer: it is not signed with the approval key there (copy ${signing.path} to that machine, the same file on both)`,
            ),
          )
      }
      const timer = setTimeout(
        () =>
          finish(
            new RpcFailure(
              'unavailable',
              `the process running session ${sessionId} on ${row.host} has not taken the answer within ${ANSWER_WAIT_MS / 1000} s; it applies it if the ask still waits`,
            ),
          ),
        ANSWER_WAIT_MS,
      )
      this.verdicts.set(key, check)
      check()
    })
  }

  /** The person's approval key, read (or made) for each answer: a key copied here counts without a restart. */
  private approvalKey(): ApprovalKey {
    try {
      return approvalKey()
    } catch (error) {
      throw new RpcFailure('unavailable', (error as Error).message)
    }
  }

  private mine(row: StoredAsk): boolean {
    return row.host === this.feed.self.host && row.pid === this.feed.self.pid
  }

  private inScope(id: string): boolean {
    let known = this.scoped.get(id)
    if (known === undefined) {
      const cwd = this.served.ctx.sessions.headerOf(id)?.cwd
      known = cwd !== undefined && (this.served.all || resolve(cwd) === resolve(this.served.cwd))
      this.scoped.set(id, known)
    }
    return known
  }

  private heard(id: string, seq: number): void {
    // A session open here sends its own events as they are appended.
    if (this.served.ctx.sessions.get(id)) return
    if (!this.inScope(id)) return
    const last = this.sent.get(id)
    if (!this.served.hub.size) {
      // Nobody watches: nothing is read, but where the log ends is kept for the hello of a tab that connects.
      this.sent.set(id, Math.max(seq, last ?? -1))
      return
    }
    if (last === undefined) {
      this.sent.set(id, seq - 1)
      // First heard of here, from whatever seq: its first announcements may have come before this host listened (the
      // tabs then list it on this frame, which they take as a cue to list again).
      const header = this.served.ctx.sessions.headerOf(id)
      if (header) this.served.hub.broadcast({ type: 'session/created', session: this.served.infoOfHeader(header) })
    } else if (seq <= last) return
    this.due.add(id)
    this.schedule()
  }

  /** Reads the new events of every session due, once per turn of the event loop whatever the announcements. */
  private schedule(): void {
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined
      for (const id of [...this.due]) {
        this.due.delete(id)
        try {
          this.readOn(id)
        } catch (error) {
          this.served.ctx.emit(
            this.served.ctx,
            'internal/warning',
            `web: following session ${id} failed: ${(error as Error).message}`,
          )
        }
      }
    })
  }

  private readOn(id: string): void {
    for (;;) {
      const after = this.sent.get(id)
      if (after === undefined || this.served.ctx.sessions.get(id)) return
      const events = this.feed.eventsAfter(id, after, BATCH)
      for (const event of events) this.send(id, event)
      if (events.length < BATCH) return
    }
  }

  private send(id: string, event: SessionEvent): void {
    this.sent.set(id, event.seq)
    this.served.hub.broadcast({ type: 'session/event', sessionId: id, ...this.served.entry(event) })
    // The list shows which sessions run: a tab refreshes it on a status change.
    if (event.type === 'turn/start' || event.type === 'turn/end')
      this.served.hub.broadcast({
        type: 'agent/status',
        sessionId: id,
        status: event.type === 'turn/start' ? 'running' : 'idle',
      })
  }

  private askChanged(sessionId: string, callId: string): void {
    const waiting = this.verdicts.get(keyOf(sessionId, callId))
    if (!waiting && !this.served.hub.size) return
    const row = this.feed.ask(sessionId, callId)
    waiting?.()
    if (!row || this.mine(row) || !this.inScope(row.pageId)) return
    if (row.settled)
      this.served.hub.broadcast({ type: 'permission/settled', sessionId: row.pageId, askSessionId: sessionId, callId })
    else if (!row.answer)
      this.served.hub.broadcast({
        type: 'permission/ask',
        sessionId: row.pageId,
        ask: askOf(row),
      })
  }
}

/** The question as the owner stored it, under the ids of its row. */
function askOf(row: StoredAsk): PermissionAsk {
  return { ...(row.ask as unknown as PermissionAsk), sessionId: row.sessionId, callId: row.callId }
}

function keyOf(sessionId: string, callId: string): string {
  return `${sessionId}\u0000${callId}`
}
