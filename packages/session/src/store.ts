import { randomUUID } from 'node:crypto'
import { closeSync, lstatSync, readdirSync, readSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { type Context, Service } from 'cordis'
import { backscan } from './backscan.ts'
import { escapeLine } from './escape.ts'
import { parseHeader, readSessionFile, SessionWriter } from './file.ts'
import { acquireLock } from './lock.ts'
import { cwdSlug, sessionPath, sessionsRoot } from './paths.ts'
import { checkSessionEntry, errnoText, openSessionFile, SessionFileError } from './regular.ts'
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

export interface SessionSummary {
  id: string
  cwd: string
  createdAt: number
  updatedAt: number
  path: string
  parent?: { sessionId: string; callId: string }
  forkedFrom?: { sessionId: string; seq: number }
  /** The first user prompt, cut to one line. */
  title: string
}

export interface OpenedSession {
  session: Session
  /** What load had to mend: a torn last line dropped, an open turn closed. */
  repairs: string[]
}

interface Live {
  session: Session
  writer?: SessionWriter
  release?: () => void
  /** Where a persistent session's file goes, until its first event creates it. */
  pending?: string
}

export class SessionNotFoundError extends Error {
  constructor(id: string) {
    super(`no session with id ${id}`)
    this.name = 'SessionNotFoundError'
  }
}

/**
 * `ctx.sessions`: creates, opens and tracks live sessions; writes persistent ones to JSONL (one writer each, by
 * lock) and publishes every committed event as `session/event`.
 */
export class SessionStore extends Service {
  private readonly live = new Map<string, Live>()

  constructor(ctx: Context) {
    super(ctx, 'sessions', true)
    ctx.on('dispose', () => {
      for (const id of [...this.live.keys()]) this.closeId(id)
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
      entry.pending = sessionPath(header.cwd, id)
      if (lstatSync(entry.pending, { throwIfNoEntry: false }))
        throw new Error(`session ${id} already exists (${entry.pending})`)
      if (!options.deferFile) writerOf(entry)
    }
    return this.attach(entry)
  }

  /** Reopens a persisted session: repairs a torn tail and an open turn, takes the writer lock, goes live. */
  open(id: string): OpenedSession {
    if (!isSessionId(id)) throw new Error(`not a session id: ${JSON.stringify(id)}`)
    const existing = this.live.get(id)
    if (existing) return { session: existing.session, repairs: [] }
    const path = this.locate(id)
    if (!path) throw new SessionNotFoundError(id)
    const release = acquireLock(path + '.lock')
    let session: Session
    const repairs: string[] = []
    try {
      const file = loadFile(path, id)
      let seeded: Session
      try {
        seeded = new Session(file.header, file.events, {}, { adoptSeed: true })
      } catch (error) {
        if (error instanceof SeedError && error.seq !== undefined)
          throw new SessionFileError(path, error.seq + 2, error.message)
        throw error
      }
      if (file.tornLine)
        repairs.push(
          `${path}: dropped a torn last line (line ${file.tornLine}); the file now ends at the last whole event`,
        )
      const writer = SessionWriter.reopen(path, file.validBytes)
      session = this.attach({ session: seeded, writer, release })
    } catch (error) {
      release()
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
    if (live) return { header: live.session.header, events: [...live.session.events], path: live.writer?.path ?? '' }
    const path = this.locate(id)
    if (!path) throw new SessionNotFoundError(id)
    const file = loadFile(path, id)
    return { header: file.header, events: file.events, path }
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
    const writer = SessionWriter.create(sessionPath(header.cwd, forkId), forkHeader)
    try {
      for (const event of events.slice(0, seq)) writer.write(event)
      writer.sync()
    } finally {
      writer.close()
    }
    return forkId
  }

  /** The file of a persisted session (for a live one: where it is written from its first event), or undefined. */
  pathOf(id: string): string | undefined {
    const live = this.live.get(id)
    return live?.writer?.path ?? live?.pending ?? this.locate(id)
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
    const root = sessionsRoot()
    const dirs = cwd ? [join(root, cwdSlug(cwd))] : entries(root).map((dir) => join(root, dir))
    const out: SessionSummary[] = []
    const skip = (path: string, problem: string) => this.ctx.emit('session/skipped', path, problem)
    for (const dir of dirs) {
      for (const name of entries(dir)) {
        if (!name.endsWith('.jsonl')) continue
        const path = join(dir, name)
        const summary = summarize(path, skip)
        if (summary && (!cwd || summary.cwd === resolve(cwd))) out.push(summary)
      }
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt)
  }

  /** Finds the latest event a visitor answers for, reading the file backwards (see backscan). */
  backscan<T>(id: string, visit: (event: SessionEvent) => T | undefined) {
    const path = this.pathOf(id)
    if (!path) throw new SessionNotFoundError(id)
    return backscan(path, visit)
  }

  /** The entry named like the session, whatever it is (reading it then says what is wrong with it). */
  private locate(id: string): string | undefined {
    const root = sessionsRoot()
    for (const dir of entries(root)) {
      const path = join(root, dir, `${id}.jsonl`)
      try {
        lstatSync(path)
        return path
      } catch {}
    }
    return undefined
  }

  /** Makes a session live: validate, then write, then publish each append. Undone if a `session/created` listener refuses it. */
  private attach(entry: Live): Session {
    const { session } = entry
    const ctx = this.ctx
    const lifecycle = ctx.lifecycle
    session.hooks = {
      beforeCommit: (s, event) => validate(lifecycle, s, event),
      persist: entry.writer || entry.pending ? (_, event) => writerOf(entry).write(event) : undefined,
      afterCommit: (s, event) => publish(ctx, lifecycle, s, event),
    }
    this.live.set(session.id, entry)
    try {
      ctx.emit('session/created', session)
    } catch (error) {
      this.live.delete(session.id)
      entry.writer?.close()
      entry.release?.()
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
    entry.release?.()
    this.ctx.emit('session/closed', entry.session)
  }
}

/** The session's writer, creating its file (under the writer lock) on the first event. */
function writerOf(entry: Live): SessionWriter {
  if (entry.writer) return entry.writer
  const path = entry.pending!
  const release = acquireLock(path + '.lock')
  try {
    entry.writer = SessionWriter.create(path, entry.session.header)
  } catch (error) {
    release()
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`session ${entry.session.id} already exists (${path})`)
    throw error
  }
  entry.release = release
  entry.pending = undefined
  return entry.writer
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

/** Directory entries, or none when the directory is missing; any other failure names the directory. */
function entries(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return []
    throw new SessionFileError(dir, 0, `cannot list this folder: ${errnoText(error)}`)
  }
}

/** Loads a session file and checks that its header names the session its file name says. */
function loadFile(path: string, id: string) {
  const file = readSessionFile(path)
  if (file.header.id !== id)
    throw new SessionFileError(path, 1, `the header names session ${file.header.id}, not ${id} as the file name says`)
  return file
}

const TITLE_BYTES = 64 * 1024
const TITLE_PEEK = 8 * 1024

/** The text of the person's first prompt in the lines after the header (a torn last line does not parse); undefined when none is there. */
function titleOf(text: string): string | undefined {
  const lines = text.split('\n')
  for (const line of lines.slice(1)) {
    try {
      const event = JSON.parse(line) as SessionEvent
      if (event.type === 'user/message' && (event.data.message.source ?? 'user') === 'user') {
        let title = ''
        for (const block of event.data.message.content)
          if (block.type === 'text' && typeof block.text === 'string') title += block.text
        return title
      }
    } catch {}
  }
  return undefined
}

/** A summary from the first 64 KB, or undefined (and a `skip` report) for an entry that is not a readable session. */
function summarize(path: string, skip: (path: string, problem: string) => void): SessionSummary | undefined {
  let problem: string | undefined
  try {
    problem = checkSessionEntry(path)
  } catch {
    return undefined // gone since the directory was read
  }
  if (problem) {
    skip(path, problem)
    return undefined
  }
  let opened: ReturnType<typeof openSessionFile>
  try {
    opened = openSessionFile(path, 'read')
  } catch (error) {
    skip(path, `${(error as SessionFileError).problem ?? (error as Error).message}; skipped`)
    return undefined
  }
  let text: string
  let title: string | undefined
  try {
    // The header and the first prompt are almost always in the first few KB; read up to 64 KB only when they are not.
    const head = (size: number) => {
      const buffer = Buffer.allocUnsafe(size)
      const read = readSync(opened.fd, buffer, 0, size, 0)
      return { text: buffer.toString('utf8', 0, read), full: read === size }
    }
    const peek = head(TITLE_PEEK)
    text = peek.text
    title = titleOf(text)
    if (peek.full && title === undefined) {
      text = head(TITLE_BYTES).text
      title = titleOf(text)
    }
  } catch (error) {
    skip(path, `cannot read it: ${errnoText(error)}; skipped`)
    return undefined
  } finally {
    closeSync(opened.fd)
  }
  const lines = text.split('\n')
  let header: SessionHeader
  try {
    if (lines.length < 2) throw new SessionFileError(path, 1, 'the header line is torn or longer than 64 KB')
    header = parseHeader(path, lines[0]!)
    const id = basename(path, '.jsonl')
    if (header.id !== id)
      throw new SessionFileError(path, 1, `the header names session ${header.id}, not ${id} as the file name says`)
  } catch (error) {
    skip(path, `${(error as SessionFileError).problem ?? (error as Error).message}; skipped`)
    return undefined
  }
  return {
    id: header.id,
    cwd: header.cwd,
    createdAt: header.createdAt,
    updatedAt: opened.stats.mtimeMs,
    path,
    ...(header.parent ? { parent: header.parent } : {}),
    ...(header.forkedFrom ? { forkedFrom: header.forkedFrom } : {}),
    title: (title ?? '').replace(/\s+/g, ' ').trim().slice(0, 120),
  }
}
