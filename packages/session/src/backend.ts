import type { BackscanResult } from './backscan.ts'
import type { SessionEvent, SessionHeader } from './types.ts'

/** One session's writer: it holds that session's single-writer lock until `close()`. */
export interface LogWriter {
  /** Where the log is, for messages: a file path, or a database address without its password. */
  readonly where: string
  /**
   * Writes one event, durably at the backend's durability points; a throw leaves nothing of it in the log. With
   * `defer`, a durability point this event would be may wait for the next `settle()` (a backend whose every write
   * is durable ignores it).
   */
  write(event: SessionEvent, defer?: boolean): void
  /** Makes the durability points deferred since the last one durable; a throw means they may not be. */
  settle?(): void
  /** Flushes and releases the lock. */
  close(): void
}

export interface LoadedLog {
  header: SessionHeader
  events: SessionEvent[]
  where: string
  /** What loading had to mend (a torn last line), one sentence each. */
  repairs: string[]
}

/** A log loaded under its writer lock, not yet written to. */
export interface LockedLog {
  log: LoadedLog
  /** Mends what loading found (cuts a torn tail) and returns the writer, positioned after the last event. */
  resume(): LogWriter
  /** Gives the lock back without writing (the log was refused). */
  release(): void
}

/** A summary of a persisted session, as `sessions list` shows it. */
export interface SessionSummary {
  id: string
  cwd: string
  createdAt: number
  updatedAt: number
  /** Where the log is (`LogWriter.where`). */
  path: string
  parent?: { sessionId: string; callId: string }
  forkedFrom?: { sessionId: string; seq: number }
  /** The first user prompt, cut to one line. */
  title: string
  /** The machine the session ran on, where the store records it (the PostgreSQL store). */
  host?: string
}

/**
 * Where persisted sessions live: the JSONL files under `$KEEL_HOME/sessions` (file-backend.ts) or another store
 * (@keel/store-pg). `SessionStore` keeps the rules (ids, the live set, repair, publishing); a backend only stores.
 */
export interface SessionBackend {
  /** Where a new session's log will be; throws when one with its id exists already. */
  reserve(header: SessionHeader): string
  /** Creates the log with its header and takes its writer lock. */
  create(header: SessionHeader): LogWriter
  /** Takes the writer lock and loads the log; undefined when there is no such session. */
  lock(id: string): LockedLog | undefined
  /** Loads the log without locking or mending it; undefined when there is no such session. */
  read(id: string): LoadedLog | undefined
  /** The session's header alone (cheap: no events read); undefined when there is none or it cannot be read. */
  header(id: string): SessionHeader | undefined
  /** Where the log of `id` is, or undefined. */
  locate(id: string): string | undefined
  /** Persisted sessions (of `cwd` when given), in any order; `skip` reports an entry that is not a session. */
  list(cwd: string | undefined, skip: (where: string, problem: string) => void): SessionSummary[]
  /** The latest event a visitor answers for, newest first (see backscan.ts); undefined when there is no such log. */
  backscan<T>(id: string, visit: (event: SessionEvent) => T | undefined): BackscanResult<T> | undefined
  /** A new log holding `events` whole, or nothing (a fork, a copy). */
  write(header: SessionHeader, events: readonly SessionEvent[]): void
  /** The error for a stored event that a session refuses (bad seq, bad surface metadata). */
  damaged(where: string, seq: number, problem: string): Error
  /** Releases what the backend holds (connections); live writers are closed first. */
  dispose?(): void
}
