// What lets a process follow sessions other processes write to the same database, and answer their approvals: the
// announcements of the trigger (LISTEN `keel_events`: '<session id> <seq>' per committed event; `keel_asks`: '<session
// id> <call id>' per change of an ask), then reads by key. No polling: a reader waits on the announcements, and after
// a dropped LISTEN connection it is told (`resumed`) and reads whatever was committed meanwhile by seq.
import type { SessionEvent } from '@keel/session'
import { type AnswerFields, type ApprovalKey, answerProof, askDigest, askNonce } from './approval.ts'
import type { PgNotice } from './bridge.ts'

/** What a follower hears. */
export interface FeedListener {
  /** Some process committed event `seq` of session `id` (announced at commit, in order per session). */
  event?(id: string, seq: number): void
  /** The ask of `callId` in session `sessionId` was asked, answered or settled: read it with `ask()`. */
  ask?(sessionId: string, callId: string): void
  /** Listening again after the connection dropped: what was committed meanwhile was not announced. */
  resumed?(): void
}

/** One approval a running session waits for (or waited for), as the owning process wrote it. */
export interface StoredAsk {
  sessionId: string
  callId: string
  /** The top-level session whose page shows it (the session itself, or a subagent's parent). */
  pageId: string
  /** The process that runs the session and alone may decide the ask. */
  host: string
  pid: number
  /** The question, as the owner's permission service put it. */
  ask: Record<string, unknown>
  /** The owner's random nonce for this ask: an answer's proof covers it (src/approval.ts). */
  nonce?: string
  /** The first answer from another process, if any, the machine it names, and its proof. */
  answer?: Record<string, unknown>
  answeredFrom?: string
  proof?: string
  /** The ask left the owner's waiting set (answered there or elsewhere, or its turn ended). */
  settled: boolean
  /** Once settled after a remote answer: whether that answer was the one that decided it. */
  taken?: boolean
}

interface AskRow {
  session_id: string
  call_id: string
  page_id: string
  host: string
  pid: number
  ask: string
  answer: string | null
  answered_from: string | null
  nonce: string | null
  proof: string | null
  settled: boolean
  taken: boolean | null
}

type Query = <T>(sql: string, params?: unknown[]) => T[]

/** The key of a session's advisory lock as pg_locks shows it (an int8 key: high half in classid, low in objid). */
const HELD = `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = ((hashtextextended(%s, 40) >> 32) & 4294967295)::oid
  AND l.objid = (hashtextextended(%s, 40) & 4294967295)::oid)`

function held(column: string): string {
  return HELD.replaceAll('%s', column)
}

const BATCH = 500

export class SessionFeed {
  private readonly listeners = new Set<FeedListener>()
  private started = false

  constructor(
    private readonly query: Query,
    private readonly listen: (handler: (notice: PgNotice) => void) => void,
    /** This process in the store. */
    readonly self: { host: string; pid: number },
  ) {}

  /**
   * Starts hearing the store's announcements (the first subscriber opens the LISTEN connection). Listening does not
   * keep the process alive: a follower has its own reason to run (a server, a turn).
   */
  subscribe(listener: FeedListener): () => void {
    if (!this.started) {
      // A failure (the database unreachable) is the caller's; the next subscriber tries again.
      this.listen((notice) => this.hear(notice))
      this.started = true
    }
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  private hear(notice: PgNotice): void {
    for (const listener of [...this.listeners]) {
      try {
        if (notice.kind === 'listening') {
          if (notice.again) listener.resumed?.()
          continue
        }
        const space = notice.payload.indexOf(' ')
        if (space < 0) continue
        const id = notice.payload.slice(0, space)
        const rest = notice.payload.slice(space + 1)
        if (notice.channel === 'keel_events') listener.event?.(id, Number(rest))
        else if (notice.channel === 'keel_asks') listener.ask?.(id, rest)
      } catch {} // a listener's failure (the database gone while it reads) must not stop the others hearing
    }
  }

  /** The events of `id` after `afterSeq`, oldest first, at most `limit` (read by key). */
  eventsAfter(id: string, afterSeq: number, limit = BATCH): SessionEvent[] {
    return this.query<{ event: string }>(
      'SELECT event FROM keel_events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [id, afterSeq, limit],
    ).map((row) => JSON.parse(row.event) as SessionEvent)
  }

  /** The machine a session runs (or ran) on, and whether some process holds its writer lock now. */
  whereRuns(id: string): { host: string; open: boolean } | undefined {
    const row = this.query<{ host: string; open: boolean }>(
      `SELECT host, ${held('id')} AS open FROM keel_sessions WHERE id = $1`,
      [id],
    )[0]
    return row ? { host: row.host, open: row.open } : undefined
  }

  /** The sessions among `ids` whose writer lock some process holds now. */
  openOf(ids: readonly string[]): Set<string> {
    if (!ids.length) return new Set()
    const rows = this.query<{ id: string }>(`SELECT id FROM keel_sessions WHERE id = ANY($1) AND ${held('id')}`, [ids])
    return new Set(rows.map((row) => row.id))
  }

  // --- Asks: the owner writes and settles them, another machine answers.

  /**
   * The owner: `sessionId` waits for an answer to `callId` (a new question for the same call replaces the last).
   * Returns the ask's new nonce, which the owner keeps: the row's copy is only what answering doors sign.
   */
  putAsk(sessionId: string, callId: string, pageId: string, ask: Record<string, unknown>): string {
    const nonce = askNonce()
    this.query(
      `INSERT INTO keel_asks (session_id, call_id, page_id, host, pid, asked_at, ask, nonce)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (session_id, call_id) DO UPDATE SET page_id = $3, host = $4, pid = $5, asked_at = $6, ask = $7,
         nonce = $8, answer = NULL, answered_from = NULL, proof = NULL, settled = false, taken = NULL`,
      [sessionId, callId, pageId, this.self.host, this.self.pid, Date.now(), JSON.stringify(ask), nonce],
    )
    return nonce
  }

  /**
   * The owner: the answer to its ask (under `nonce`) is refused (no valid proof); it is cleared, so the ask waits
   * again, on every page, for an answer.
   */
  refuseAnswer(sessionId: string, callId: string, nonce: string): void {
    this.query(
      `UPDATE keel_asks SET answer = NULL, answered_from = NULL, proof = NULL WHERE session_id = $1 AND call_id = $2
         AND host = $3 AND pid = $4 AND nonce = $5 AND NOT settled AND answer IS NOT NULL`,
      [sessionId, callId, this.self.host, this.self.pid, nonce],
    )
  }

  /** The owner: the ask left its waiting set; `taken` when the remote answer is what decided it. */
  settleAsk(sessionId: string, callId: string, taken?: boolean): void {
    this.query(
      `UPDATE keel_asks SET settled = true, taken = $5 WHERE session_id = $1 AND call_id = $2 AND host = $3 AND pid = $4
         AND NOT settled`,
      [sessionId, callId, this.self.host, this.self.pid, taken ?? null],
    )
  }

  /** The owner: the asks of this process that another machine answered and that wait to be applied. */
  answeredAsks(): StoredAsk[] {
    return this.query<AskRow>(
      'SELECT * FROM keel_asks WHERE host = $1 AND pid = $2 AND NOT settled AND answer IS NOT NULL',
      [this.self.host, this.self.pid],
    ).map(stored)
  }

  /** One ask as stored; undefined when there is none. */
  ask(sessionId: string, callId: string): StoredAsk | undefined {
    const row = this.query<AskRow>('SELECT * FROM keel_asks WHERE session_id = $1 AND call_id = $2', [
      sessionId,
      callId,
    ])[0]
    return row ? stored(row) : undefined
  }

  /** The asks waiting on the page of `pageId` whose owner still holds the session (a dead owner's are stale). */
  waitingOn(pageId: string): StoredAsk[] {
    return this.query<AskRow>(
      `SELECT * FROM keel_asks WHERE page_id = $1 AND NOT settled AND answer IS NULL AND ${held('session_id')}
       ORDER BY asked_at`,
      [pageId],
    ).map(stored)
  }

  /**
   * Another process: writes its answer to the ask as it read and showed it (`row`: its nonce and question), signed
   * with `key`, if that ask still waits, no answer came first, and its owner still holds the session. True when this
   * answer is the one the owner will check and apply (unless the owner decided meanwhile).
   */
  answer(row: StoredAsk, answer: AnswerFields, from: string, key: ApprovalKey): boolean {
    const { sessionId, callId, nonce } = row
    if (!nonce) return false
    const proof = answerProof(key, { sessionId, callId, nonce, asked: askDigest(row.ask), from }, answer)
    return (
      this.query(
        `UPDATE keel_asks SET answer = $3, answered_from = $4, proof = $5 WHERE session_id = $1 AND call_id = $2
           AND nonce = $6 AND NOT settled AND answer IS NULL AND ${held('session_id')} RETURNING 1`,
        [sessionId, callId, JSON.stringify(answer), from, proof, nonce],
      ).length === 1
    )
  }
}

function stored(row: AskRow): StoredAsk {
  return {
    sessionId: row.session_id,
    callId: row.call_id,
    pageId: row.page_id,
    host: row.host,
    pid: row.pid,
    ask: JSON.parse(row.ask) as Record<string, unknown>,
    ...(row.answer !== null ? { answer: JSON.parse(row.answer) as Record<string, unknown> } : {}),
    ...(row.answered_from !== null ? { answeredFrom: row.answered_from } : {}),
    ...(row.nonce !== null ? { nonce: row.nonce } : {}),
    ...(row.proof !== null ? { proof: row.proof } : {}),
    settled: row.settled,
    ...(row.taken !== null ? { taken: row.taken } : {}),
  }
}
