import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import type { LogWriter, SessionBackend, SessionSummary } from './backend.ts'
import { escapeLine } from './escape.ts'
import { FileBackend } from './file-backend.ts'
import { closeOpenTurn, findOpenTurn, unpairedCalls } from './open-turns.ts'
import { SeedError, Session, type SessionHooks } from './session.ts'
import { isSessionId, SESSION_FORMAT_VERSION, type SessionEvent, type SessionHeader } from './types.ts'

declare module 'cordis' {
  interface Context {
    sessions: SessionStore
  }
  interface Events {
    /**
     * A session was created or opened and is now live in this process.
     * @mode emit
     */
    'session/created'(session: Session): void
    /**
     * Runs before an event commits; a listener that throws vetoes the append (dev-mode invariants use this).
     * @mode emit
     */
    'session/validate'(session: Session, event: SessionEvent): void
    /**
     * An event was committed (and, for a persistent session, written). A throwing listener never breaks the append.
     * @mode emit
     */
    'session/event'(session: Session, event: SessionEvent): void
    /**
     * A live session was closed: its writer is flushed and its lock released.
     * @mode emit
     */
    'session/closed'(session: Session): void
    /**
     * `list()` passed over an entry that is not a session it can show: not a regular file of this user (a FIFO, a
     * symlink, a directory, another user's file) or a file whose header is bad. Front doors print it as a warning.
     * @mode emit
     */
    'session/skipped'(path: string, problem: string): void
  }
}

export interface CreateSessionOptions {
  cwd: string
  id?: string
  parent?: { sessionId: string; callId: string }
  /** Write to `$KEEL_HOME/sessions/…` (default true). An in-memory session leaves nothing on disk. */
  persist?: boolean
  /** Create the file (and take its lock) at the first event rather than now: a session left without one leaves nothing. */
  deferFile?: boolean
}

export interface OpenedSession {
  session: Session
  /** What load had to mend: a torn last line dropped, an open turn closed. */
  repairs: string[]
}

interface Live {
  session: Session
  /** Holds the session's writer lock. */
  writer?: LogWriter
  /** Where a persistent session's log goes, until its first event creates it. */
  pending?: string
}

export class SessionNotFoundError extends Error {
  constructor(id: string) {
    super(`no session with id ${id}`)
    this.name = 'SessionNotFoundError'
  }
}

/**
 * `ctx.sessions`: creates, opens and tracks live sessions; writes persistent ones through its backend (JSONL files
 * by default, one writer each, by lock) and publishes every committed event as `session/event`.
 */
export class SessionStore extends Service {
  private readonly live = new Map<string, Live>()

  readonly backend: SessionBackend

  /** Plugged as a cordis plugin, the second argument is the (empty) config: only a backend object is taken. */
  constructor(ctx: Context, backend?: SessionBackend | Record<string, never>) {
    super(ctx, 'sessions', true)
    this.backend = backend && 'lock' in backend ? (backend as SessionBackend) : new FileBackend()
    ctx.on('dispose', () => {
      for (const id of [...this.live.keys()]) this.closeId(id)
      this.backend.dispose?.()
    })
  }

  create(options: CreateSessionOptions): Session {
    const id = options.id ?? randomUUID()
    if (!isSessionId(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`)
    if (this.live.has(id)) throw new Error(`session ${id} is already open`)
    const header: SessionHeader = {
      type: 'session',
      version: SESSION_FORMAT_VERSION,
      id,
      createdAt: Date.now(),
      cwd: resolve(options.cwd),
      ...(options.parent ? { parent: options.parent } : {}),
    }
    const entry: Live = { session: new Session(header) }
    if (options.persist !== false) {
      entry.pending = this.backend.reserve(header)
      if (!options.deferFile) this.writerOf(entry)
    }
    return this.attach(entry)
  }

  /** Reopens a persisted session: repairs a torn tail and an open turn, takes the writer lock, goes live. */
  open(id: string): OpenedSession {
    if (!isSessionId(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`)
    const existing = this.live.get(id)
    if (existing) return { session: existing.session, repairs: [] }
    const locked = this.backend.lock(id)
    if (!locked) throw new SessionNotFoundError(id)
    const { log } = locked
    const path = log.where
    let session: Session
    const repairs = [...log.repairs]
    try {
      let seeded: Session
      try {
        seeded = new Session(log.header, log.events, {}, { adoptSeed: true })
      } catch (error) {
        if (error instanceof SeedError && error.seq !== undefined)
          throw this.backend.damaged(path, error.seq, error.message)
        throw error
      }
      const writer = locked.resume()
      session = this.attach({ session: seeded, writer })
    } catch (error) {
      locked.release()
      throw error
    }
    try {
      const open = findOpenTurn(session.events)
      if (open && closeOpenTurn(session)) {
        const calls = open.unanswered.length
        repairs.push(
          `${path}: turn ${open.turn} was left open by a crash; closed it as interrupted${calls ? ` with an error result for ${calls} unanswered tool call${calls === 1 ? '' : 's'}` : ''}`,
        )
      }
      // A call in a closed turn with no result (its result failed to reach the disk) cannot be answered on the log
      // without breaking the turn structure; deriveMessages() answers it as interrupted instead. Said once here.
      const unpaired = unpairedCalls(session.events)
      if (unpaired.length) {
        repairs.push(
          `${path}: ${unpaired.length} earlier tool call${unpaired.length === 1 ? ' has' : 's have'} no result on the log (${unpaired.slice(0, 3).map(escapeLine).join(', ')}${unpaired.length > 3 ? ', …' : ''}); the model sees ${unpaired.length === 1 ? 'it' : 'them'} answered as interrupted`,
        )
      }
    } catch (error) {
      this.closeId(id)
      throw error
    }
    return { session, repairs }
  }

  /** A read-only load (no lock, no repair written): for `sessions show` and the host's history. */
  read(id: string): { header: SessionHeader; events: SessionEvent[]; path: string } {
    if (!isSessionId(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`)
    const live = this.live.get(id)
    if (live) return { header: live.session.header, events: [...live.session.events], path: live.writer?.where ?? '' }
    const log = this.backend.read(id)
    if (!log) throw new SessionNotFoundError(id)
    return { header: log.header, events: log.events, path: log.where }
  }

  /** A session's header (its cwd, parent, fork) without reading its events; undefined when there is none. */
  headerOf(id: string): SessionHeader | undefined {
    if (!isSessionId(id)) return undefined
    return this.live.get(id)?.session.header ?? this.backend.header(id)
  }

  get(id: string): Session | undefined {
    return this.live.get(id)?.session
  }

  /**
   * A new persisted session holding session `id`'s events before `beforeSeq` (all of them when omitted), its header
   * naming where it came from (a fork). The original is not touched; the fork is not opened. Returns its id. Not
   * named `fork`: that is a cordis Service method.
   */
  branch(id: string, beforeSeq?: number): string {
    const { header, events } = this.read(id)
    const seq = Math.min(beforeSeq ?? events.length, events.length)
    const forkId = randomUUID()
    const forkHeader: SessionHeader = {
      type: 'session',
      version: SESSION_FORMAT_VERSION,
      id: forkId,
      createdAt: Date.now(),
      cwd: header.cwd,
      forkedFrom: { sessionId: id, seq },
    }
    this.backend.write(forkHeader, events.slice(0, seq))
    return forkId
  }

  /** Where a persisted session's log is (for a live one: where it is written from its first event), or undefined. */
  pathOf(id: string): string | undefined {
    const live = this.live.get(id)
    return live?.writer?.where ?? live?.pending ?? this.backend.locate(id)
  }

  close(session: Session): void {
    if (this.live.get(session.id)?.session === session) this.closeId(session.id)
  }

  /** The sessions live in this process. */
  liveSessions(): Session[] {
    return [...this.live.values()].map((entry) => entry.session)
  }

  /**
   * Persisted sessions, newest first; only those of `cwd` when given. Entries that are not sessions (not a regular
   * file of this user, or a bad header) are skipped, each reported once per call as `session/skipped`.
   */
  list(cwd?: string): SessionSummary[] {
    const out = this.backend.list(cwd, (path, problem) => this.ctx.emit('session/skipped', path, problem))
    return out.sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt)
  }

  /** Finds the latest event a visitor answers for, reading the log backwards (see backscan). */
  backscan<T>(id: string, visit: (event: SessionEvent) => T | undefined) {
    const found = this.backend.backscan(id, visit)
    if (found) return found
    const live = this.live.get(id)
    if (live) return scanEvents(live.session.events, visit)
    throw new SessionNotFoundError(id)
  }

  /** The session's writer, creating its log (under the writer lock) on the first event. */
  private writerOf(entry: Live): LogWriter {
    if (entry.writer) return entry.writer
    entry.writer = this.backend.create(entry.session.header)
    entry.pending = undefined
    return entry.writer
  }

  /** Makes a session live: validate, then write, then publish each append. Undone if a `session/created` listener refuses it. */
  private attach(entry: Live): Session {
    const { session } = entry
    const ctx = this.ctx
    const lifecycle = ctx.lifecycle
    session.hooks = {
      beforeCommit: (s, event) => validate(lifecycle, s, event),
      persist: entry.writer || entry.pending ? (s, event) => this.writerOf(entry).write(event, s.holding) : undefined,
      settle: () => entry.writer?.settle?.(),
      afterCommit: (s, event) => publish(ctx, lifecycle, s, event),
    }
    this.live.set(session.id, entry)
    try {
      ctx.emit('session/created', session)
    } catch (error) {
      this.live.delete(session.id)
      entry.writer?.close()
      session.hooks = closedHooks
      throw error
    }
    return session
  }

  private closeId(id: string): void {
    const entry = this.live.get(id)
    if (!entry) return
    this.live.delete(id)
    entry.session.hooks = closedHooks
    entry.writer?.close()
    this.ctx.emit('session/closed', entry.session)
  }
}

/** A closed session refuses appends: they would reach neither the file nor any listener. */
const closedHooks: SessionHooks = {
  beforeCommit(session, event) {
    throw new Error(`session ${session.id} is closed; cannot append ${event.type} (open it again to continue)`)
  },
}

// The two per-append events call their listeners straight from the lifecycle's hook list: the same listeners in the
// same order as `ctx.emit` (no `this` argument, so no isolation filter applies), without emit's extra dispatch of
// `internal/event`, which costs more than everything else an append does.
type Lifecycle = Context['lifecycle']

function hooksOf(lifecycle: Lifecycle, name: string) {
  return lifecycle._hooks[name]?.slice() ?? []
}

/** Runs every `session/validate` listener; the first to throw vetoes the append. */
function validate(lifecycle: Lifecycle, session: Session, event: SessionEvent): void {
  for (const hook of hooksOf(lifecycle, 'session/validate')) hook.callback(session, event)
}

/** Calls each `session/event` listener in its own try/catch: an observer's bug must not break the log. */
function publish(ctx: Context, lifecycle: Lifecycle, session: Session, event: SessionEvent): void {
  for (const hook of hooksOf(lifecycle, 'session/event')) {
    try {
      hook.callback(session, event)
    } catch (error) {
      ctx.emit(ctx, 'internal/warning', `session/event listener failed: ${(error as Error)?.stack ?? error}`)
    }
  }
}

/** A backscan over events in memory (a session that is not persisted), newest first. */
function scanEvents<T>(events: readonly SessionEvent[], visit: (event: SessionEvent) => T | undefined) {
  for (let i = events.length - 1; i >= 0; i--) {
    const value = visit(events[i]!)
    if (value !== undefined) return { value, bytesRead: 0 }
  }
  return { value: undefined, bytesRead: 0 }
}
