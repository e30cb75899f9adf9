import { hostname } from 'node:os'
import {
  type BackscanResult,
  isSessionId,
  type LoadedLog,
  type LockedLog,
  type LogWriter,
  type SessionBackend,
  type SessionEvent,
  type SessionHeader,
  SessionLockedError,
  type SessionSummary,
  SessionWriteError,
  headerProblem,
  holderAlive,
} from '@keel/session'
import { SyncPg } from './bridge.ts'
import { SessionFeed } from './feed.ts'
import { migrate, SchemaError } from './schema.ts'
import { redactUrl, scrub } from './url.ts'

/** What this machine is called in a shared store: `KEEL_HOST`, else the host name. */
export function hostName(): string {
  return process.env.KEEL_HOST?.trim() || hostname()
}

/** The session store could not be reached or refused what was asked; the message never holds the password. */
export class SessionStoreError extends Error {
  constructor(
    where: string,
    /** The cause alone, without the store's address. */
    readonly detail: string,
  ) {
    super(`the session store ${where} failed: ${detail}`)
    this.name = 'SessionStoreError'
  }
}

/** Who holds a session's writer lock, as its holder recorded it. */
interface Writer {
  host: string
  pid: number
  since: number
}

/** A second writer was refused: names the machine and process that hold the session. */
export class SessionHeldError extends SessionLockedError {
  constructor(where: string, id: string, writer: Writer | undefined) {
    super(where, { pid: writer?.pid ?? 0, ...(writer ? { since: writer.since } : {}) })
    const since = writer ? `, since ${new Date(writer.since).toISOString().replace('T', ' ').slice(0, 19)} UTC` : ''
    this.message = writer
      ? `session ${id} is open on ${writer.host} (pid ${writer.pid}${since}); its lock is held in ${where}`
      : `session ${id} is open in another process; its lock is held in ${where}`
  }
}

/** A stored event the session refuses (it should never happen: the database keeps the order). */
class StoredLogError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SessionFileError'
  }
}

export interface PgBackendOptions {
  /** Connection timeout (default 5 s). */
  connectMs?: number
  /** Query timeout (default 15 s). */
  queryMs?: number
}

/** Something to wait on between lock attempts (never notified). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4))

const BACKSCAN_FIRST = 32
const BACKSCAN_MAX = 2048
const COPY_ROWS = 500

interface SessionRow {
  id: string
  cwd: string
  host: string
  created_at: string
  updated_at: string
  title: string | null
  header: string
}

/**
 * The session log in PostgreSQL: a row per session, a row per event keyed (session_id, seq); one writer per session
 * by a session-scoped advisory lock on this process's connection, which the server drops when the connection dies.
 */
export class PgBackend implements SessionBackend {
  /** The database as it may be printed (no password). */
  readonly address: string
  /** This machine's name, taken once as the store starts (what it records as each session's host). */
  readonly host = hostName()
  private readonly db: SyncPg
  private migrated = false
  private following: SessionFeed | undefined

  constructor(
    private readonly url: string,
    options: PgBackendOptions = {},
  ) {
    this.address = redactUrl(url)
    this.db = new SyncPg({
      url,
      application: `keel ${this.host} pid ${process.pid}`.slice(0, 63),
      connectMs: options.connectMs ?? 5000,
      queryMs: options.queryMs ?? 15000,
    })
  }

  where(id: string): string {
    return `${this.address} session ${id}`
  }

  /** One call, with the schema brought up to date first; errors become one line without the password. */
  private call<T>(op: Parameters<SyncPg['call']>[0]): T {
    try {
      if (!this.migrated) {
        migrate(this.db, this.address)
        this.migrated = true
      }
      return this.db.call<T>(op)
    } catch (error) {
      throw this.failure(error)
    }
  }

  private failure(error: unknown): Error {
    if (error instanceof SchemaError) return error
    return new SessionStoreError(this.address, scrub(error instanceof Error ? error.message : String(error), this.url))
  }

  private query<T>(sql: string, params: unknown[] = []): T[] {
    return this.call<{ rows: T[] }>({ kind: 'query', sql, params }).rows
  }

  reserve(header: SessionHeader): string {
    if (this.query('SELECT 1 FROM keel_sessions WHERE id = $1', [header.id]).length)
      throw new Error(`session ${header.id} already exists (${this.where(header.id)})`)
    return this.where(header.id)
  }

  create(header: SessionHeader): LogWriter {
    const where = this.where(header.id)
    this.takeLock(header.id)
    try {
      this.query(
        `INSERT INTO keel_sessions (id, cwd, host, created_at, updated_at, header, writer)
         VALUES ($1, $2, $3, $4, $4, $5, $6)`,
        [header.id, header.cwd, this.host, header.createdAt, JSON.stringify(header), JSON.stringify(this.self())],
      )
    } catch (error) {
      this.releaseLock(header.id)
      if (/duplicate key|already exists/.test((error as Error).message))
        throw new Error(`session ${header.id} already exists (${where})`)
      throw error
    }
    return this.writer(header.id)
  }

  lock(id: string): LockedLog | undefined {
    if (!this.locate(id)) return undefined
    this.takeLock(id)
    try {
      const log = this.load(id)
      if (!log) throw new Error(`session ${id} was removed while it was being opened`)
      this.query('UPDATE keel_sessions SET writer = $2 WHERE id = $1', [id, JSON.stringify(this.self())])
      return { log, resume: () => this.writer(id), release: () => this.releaseLock(id) }
    } catch (error) {
      this.releaseLock(id)
      throw error
    }
  }

  read(id: string): LoadedLog | undefined {
    return this.load(id)
  }

  header(id: string): SessionHeader | undefined {
    const row = this.query<{ header: string }>('SELECT header FROM keel_sessions WHERE id = $1', [id])[0]
    try {
      return row ? this.parseHeader(id, row.header) : undefined
    } catch {
      return undefined
    }
  }

  locate(id: string): string | undefined {
    if (!isSessionId(id)) return undefined
    return this.query('SELECT 1 FROM keel_sessions WHERE id = $1', [id]).length ? this.where(id) : undefined
  }

  list(cwd: string | undefined, skip: (where: string, problem: string) => void): SessionSummary[] {
    // A folder's sessions are this machine's: the same path on another machine is another checkout.
    const rows = cwd
      ? this.query<SessionRow>(
          'SELECT id, cwd, host, created_at, updated_at, title, header FROM keel_sessions WHERE cwd = $1 AND host = $2',
          [cwd, this.host],
        )
      : this.query<SessionRow>('SELECT id, cwd, host, created_at, updated_at, title, header FROM keel_sessions')
    const out: SessionSummary[] = []
    for (const row of rows) {
      let header: SessionHeader
      try {
        header = this.parseHeader(row.id, row.header)
      } catch (error) {
        skip(this.where(row.id), `${(error as Error).message}; skipped`)
        continue
      }
      out.push({
        id: row.id,
        cwd: row.cwd,
        createdAt: Number(row.created_at),
        updatedAt: Number(row.updated_at),
        path: this.where(row.id),
        ...(header.parent ? { parent: header.parent } : {}),
        ...(header.forkedFrom ? { forkedFrom: header.forkedFrom } : {}),
        title: row.title ?? '',
        host: row.host,
      })
    }
    return out
  }

  /** Newest first by the primary key, in batches that grow: the cost follows how far back the answer lies. */
  backscan<T>(id: string, visit: (event: SessionEvent) => T | undefined): BackscanResult<T> | undefined {
    const head = this.query<{ next_seq: number }>('SELECT next_seq FROM keel_sessions WHERE id = $1', [id])[0]
    if (!head) return undefined
    let before = head.next_seq
    let limit = BACKSCAN_FIRST
    let bytesRead = 0
    while (before > 0) {
      const rows = this.query<{ event: string }>(
        'SELECT event FROM keel_events WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3',
        [id, before, limit],
      )
      if (!rows.length) break
      for (const row of rows) {
        bytesRead += Buffer.byteLength(row.event)
        const event = JSON.parse(row.event) as SessionEvent
        before = event.seq
        const value = visit(event)
        if (value !== undefined) return { value, bytesRead }
      }
      limit = Math.min(limit * 4, BACKSCAN_MAX)
    }
    return { value: undefined, bytesRead }
  }

  write(header: SessionHeader, events: readonly SessionEvent[]): void {
    const statements: [string, unknown[]][] = [
      [
        `INSERT INTO keel_sessions (id, cwd, host, created_at, updated_at, header)
         VALUES ($1, $2, $3, $4, $4, $5)`,
        [header.id, header.cwd, this.host, header.createdAt, JSON.stringify(header)],
      ],
    ]
    for (let start = 0; start < events.length; start += COPY_ROWS) {
      const chunk = events.slice(start, start + COPY_ROWS)
      const values = chunk.map((_, i) => `($1, $${i * 3 + 2}, $${i * 3 + 3}, $${i * 3 + 4})`).join(', ')
      statements.push([
        `INSERT INTO keel_events (session_id, seq, type, event) VALUES ${values}`,
        [header.id, ...chunk.flatMap((event) => [event.seq, event.type, JSON.stringify(event)])],
      ])
    }
    try {
      this.call({ kind: 'transaction', statements })
    } catch (error) {
      if (/keel_sessions_pkey/.test((error as Error).message))
        throw new Error(`session ${header.id} already exists (${this.where(header.id)})`)
      throw error
    }
  }

  /** Other processes' appends and approvals, as they commit (one LISTEN connection, opened on first subscribe). */
  feed(): SessionFeed {
    this.following ??= new SessionFeed(
      (sql, params) => this.query(sql, params),
      (handler) => {
        this.query('SELECT 1') // the schema first: the channels are the triggers'
        try {
          this.db.listen(handler)
        } catch (error) {
          throw this.failure(error)
        }
      },
      { host: this.host, pid: process.pid },
    )
    return this.following
  }

  damaged(where: string, seq: number, problem: string): Error {
    return new StoredLogError(`${where}: event ${seq}: ${problem}`)
  }

  dispose(): void {
    this.db.close()
  }

  private load(id: string): LoadedLog | undefined {
    const row = this.query<{ header: string }>('SELECT header FROM keel_sessions WHERE id = $1', [id])[0]
    if (!row) return undefined
    const header = this.parseHeader(id, row.header)
    const rows = this.query<{ event: string }>('SELECT event FROM keel_events WHERE session_id = $1 ORDER BY seq', [id])
    return { header, events: rows.map((r) => JSON.parse(r.event) as SessionEvent), where: this.where(id), repairs: [] }
  }

  /** Parses and checks a stored header. */
  private parseHeader(id: string, text: string): SessionHeader {
    const header = JSON.parse(text) as SessionHeader
    const problem = headerProblem(header)
    if (problem) throw new StoredLogError(`${this.where(id)}: ${problem}`)
    return header
  }

  private self(): Writer {
    return { host: this.host, pid: process.pid, since: Date.now() }
  }

  private takeLock(id: string): void {
    // The server drops a dead holder's lock when it sees its connection close, a moment after the kill: a holder
    // that ran on this machine and is gone gets that moment (a live one, or one elsewhere, is refused at once).
    const deadline = Date.now() + 2000
    for (;;) {
      if (this.call<boolean>({ kind: 'lock', id })) return
      const writer = this.holder(id)
      const gone = writer && writer.host === this.host && !holderAlive({ pid: writer.pid })
      if (!gone || Date.now() > deadline) throw new SessionHeldError(this.where(id), id, writer)
      Atomics.wait(PAUSE, 0, 0, 20)
    }
  }

  private holder(id: string): Writer | undefined {
    const row = this.query<{ writer: string | null }>('SELECT writer FROM keel_sessions WHERE id = $1', [id])[0]
    try {
      return row?.writer ? (JSON.parse(row.writer) as Writer) : undefined
    } catch {
      return undefined
    }
  }

  private releaseLock(id: string): void {
    try {
      this.db.call({ kind: 'unlock', id })
    } catch {} // a connection that is gone has released it already
  }

  private writer(id: string): LogWriter {
    const where = this.where(id)
    let closed = false
    return {
      where,
      write: (event) => {
        if (closed) throw new Error(`session ${id} is closed`)
        try {
          this.call({
            kind: 'locked-query',
            id,
            sql: 'INSERT INTO keel_events (session_id, seq, type, event) VALUES ($1, $2, $3, $4)',
            params: [id, event.seq, event.type, JSON.stringify(event)],
          })
        } catch (error) {
          const detail = error instanceof SessionStoreError ? error.detail : (error as Error).message
          throw new SessionWriteError(where, event.type, new Error(detail))
        }
      },
      close: () => {
        if (closed) return
        closed = true
        this.releaseLock(id)
      },
    }
  }
}
