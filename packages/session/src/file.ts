import { closeSync, constants, fsyncSync, ftruncateSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { dirname, isAbsolute } from 'node:path'
import { ensureDirectory, errnoText, openSessionFile, SessionFileError } from './regular.ts'
import { isSessionId, SESSION_FORMAT_VERSION, type SessionEvent, type SessionHeader } from './types.ts'

export { SessionFileError } from './regular.ts'

export interface LoadedSessionFile {
  header: SessionHeader
  events: SessionEvent[]
  /** Byte length of the complete, valid prefix; a torn tail lies beyond it. */
  validBytes: number
  /** Set when the last line was torn and has been left out. */
  tornLine?: number
}

/** Why a parsed first line is not a usable header, or undefined. Every field is checked, so a bad one never surfaces later as a TypeError. */
export function headerProblem(value: unknown): string | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return 'the first line is not a session header (not a JSON object)'
  const header = value as Record<string, unknown>
  if (header.type !== 'session') return 'the first line is not a Keel session header (type is not "session")'
  if (typeof header.version !== 'number' || !Number.isInteger(header.version) || header.version < 1)
    return 'the header has no valid format version'
  if (header.version > SESSION_FORMAT_VERSION)
    return `written in session format ${header.version}; this Keel reads up to format ${SESSION_FORMAT_VERSION}`
  if (!isSessionId(header.id)) return 'the header has no valid session id'
  if (typeof header.createdAt !== 'number' || !Number.isFinite(header.createdAt))
    return 'the header has no valid createdAt time'
  if (typeof header.cwd !== 'string' || !isAbsolute(header.cwd)) return 'the header has no valid cwd (an absolute path)'
  if (header.parent !== undefined) {
    const parent = header.parent as Record<string, unknown> | null
    if (
      !parent ||
      typeof parent !== 'object' ||
      !isSessionId(parent.sessionId) ||
      typeof parent.callId !== 'string' ||
      !parent.callId
    ) {
      return 'the header has an invalid parent (needs a sessionId and a callId)'
    }
  }
  if (header.forkedFrom !== undefined) {
    const origin = header.forkedFrom as Record<string, unknown> | null
    if (
      !origin ||
      typeof origin !== 'object' ||
      !isSessionId(origin.sessionId) ||
      !Number.isInteger(origin.seq) ||
      (origin.seq as number) < 0
    ) {
      return 'the header has an invalid forkedFrom (needs a sessionId and a seq)'
    }
  }
  return undefined
}

/** Parses and checks a header line; throws a SessionFileError naming the file. */
export function parseHeader(path: string, line: string): SessionHeader {
  let header: unknown
  try {
    header = JSON.parse(line)
  } catch {
    throw new SessionFileError(path, 1, 'the header line is not JSON')
  }
  const problem = headerProblem(header)
  if (problem) throw new SessionFileError(path, 1, problem)
  return header as SessionHeader
}

/**
 * A line a failed or cut-short write can leave at the end of a file: one that holds a NUL byte (some filesystems pad a
 * failed write with zeros; JSON text never holds a raw NUL). Such lines, and a last line that is not JSON, are a torn
 * tail; the same lines in front of a good event are damage.
 */
function isJunk(line: string): boolean {
  return line.includes('\0')
}

/** Reads a session file: only a regular file of this user (see regular.ts), never through a symlink. */
export function readSessionFile(path: string): LoadedSessionFile {
  const { fd } = openSessionFile(path, 'read')
  let buffer: Buffer
  try {
    buffer = readFileSync(fd)
  } catch (error) {
    throw new SessionFileError(path, 0, `cannot read it: ${errnoText(error)}`)
  } finally {
    closeSync(fd)
  }
  return parseSessionFile(path, buffer)
}

/** Parses session file bytes. Only a torn tail is tolerated; any other damage is refused naming file and line. */
export function parseSessionFile(path: string, buffer: Buffer): LoadedSessionFile {
  if (!buffer.length) throw new SessionFileError(path, 1, 'empty file (no session header)')
  // One decode and one split: a newline byte never occurs inside a multi-byte UTF-8 sequence, so the pieces are
  // exactly the lines. The last piece is what follows the last newline: empty for a whole file, else a torn line.
  const lines = buffer.toString('utf8').split('\n')
  if (lines.length === 1) throw new SessionFileError(path, 1, 'the header line is torn')
  const header = parseHeader(path, lines[0]!)
  const events: SessionEvent[] = []
  const last = lines.length - 1 // index of the piece after the last newline
  for (let i = 1; i < last; i++) {
    let event: SessionEvent | undefined
    try {
      event = JSON.parse(lines[i]!)
    } catch {}
    if (event === undefined || isJunk(lines[i]!)) {
      // A bad line followed only by junk is what a cut-short or failed write leaves: a torn tail. Anywhere else it is
      // damage inside the log.
      if (lines.slice(i + 1, last).every(isJunk))
        return { header, events, validBytes: lineStart(buffer, i), tornLine: i + 1 }
      throw new SessionFileError(path, i + 1, 'line is not JSON (damage inside the log, not a torn tail)')
    }
    if (typeof event?.type !== 'string' || event.seq !== events.length) {
      throw new SessionFileError(
        path,
        i + 1,
        `expected event seq ${events.length}, found ${JSON.stringify(event?.seq)}`,
      )
    }
    events.push(event)
  }
  if (lines[last]!.length) return { header, events, validBytes: lineStart(buffer, last), tornLine: last + 1 }
  return { header, events, validBytes: buffer.length }
}

/** Byte offset where line `index` (0-based) starts. */
function lineStart(buffer: Buffer, index: number): number {
  let offset = 0
  for (let i = 0; i < index; i++) offset = buffer.indexOf(0x0a, offset) + 1
  return offset
}

/** Types after which everything logged so far must survive a crash. */
const DURABLE_TYPES = new Set(['tool/result', 'turn/end', 'user/message'])

/**
 * The writer's file operations. A test seam: tests swap one for a failing version to play a full disk or an I/O error
 * through the real append path; nothing else should touch it.
 */
export const sessionFileIo = {
  write: writeSync as (fd: number, buffer: Buffer, offset: number, length: number, position: number) => number,
  fsync: fsyncSync as (fd: number) => void,
  truncate: ftruncateSync as (fd: number, length: number) => void,
}

/** An append that did not reach the file. Nothing of it stays in the file (or, if even the cut-back failed, the writer refuses further writes and load drops the torn tail). */
export class SessionWriteError extends Error {
  readonly code: string | undefined
  constructor(
    readonly path: string,
    type: string,
    readonly cause: unknown,
  ) {
    super(`could not write ${type} to the session log ${path}: ${errnoText(cause)}`)
    this.name = 'SessionWriteError'
    this.code = (cause as NodeJS.ErrnoException)?.code
  }
}

/**
 * Appends one JSON line per event; fsyncs at the durability points so `kill -9` never loses an acknowledged result.
 * A failed write is cut back off the file before the error is thrown, so a half-written line can never end up in
 * the middle of the log; if even that fails, the writer refuses every later write.
 */
export class SessionWriter {
  private fd: number | undefined
  /** Bytes in the file: everything up to here is whole lines. */
  private size: number
  private broken: Error | undefined
  /** A durability point was deferred (`write(event, true)`) and no fsync has covered it yet. */
  private unsettled = false
  /** Bytes an fsync of this writer covers; `close()` and `sync()` skip theirs when nothing was written since. */
  private synced: number

  private constructor(
    readonly path: string,
    fd: number,
    size: number,
    synced: number,
  ) {
    this.fd = fd
    this.size = size
    this.synced = synced
  }

  /** Creates the file (never over an existing entry, never through a symlink) and writes the header durably. */
  static create(path: string, header: SessionHeader): SessionWriter {
    ensureDirectory(dirname(path))
    let fd: number
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error
      throw new SessionFileError(path, 0, `cannot create it: ${errnoText(error)}`)
    }
    try {
      const bytes = Buffer.from(JSON.stringify(header) + '\n')
      writeAll(fd, bytes, 0)
      sessionFileIo.fsync(fd)
      syncDirectory(dirname(path))
      return new SessionWriter(path, fd, bytes.length, bytes.length)
    } catch (error) {
      closeSync(fd)
      try {
        unlinkSync(path)
      } catch {} // ours (O_EXCL): a file with a torn header would only be refused later
      throw new SessionWriteError(path, 'the header', error)
    }
  }

  /** Opens an existing file for appending (same checks as a read), cutting a torn tail beyond `validBytes` first. */
  static reopen(path: string, validBytes: number): SessionWriter {
    const { fd, stats } = openSessionFile(path, 'write')
    // An earlier process wrote these bytes; whether its last fsync covered them is not known, so the first close
    // syncs unless the cut below already did.
    let synced = -1
    try {
      if (stats.size !== validBytes) {
        sessionFileIo.truncate(fd, validBytes)
        sessionFileIo.fsync(fd)
        synced = validBytes
      }
    } catch (error) {
      closeSync(fd)
      throw new SessionFileError(path, 0, `cannot cut the torn tail off: ${errnoText(error)}`)
    }
    // The fd that was checked is the one written to (positioned writes at `size`): no second open to race.
    return new SessionWriter(path, fd, validBytes, synced)
  }

  /** With `defer`, a durable type's fsync waits for `settle()` (or the next durable write that is not deferred). */
  write(event: SessionEvent, defer = false): void {
    if (this.fd === undefined) throw new Error(`session file ${this.path} is closed`)
    if (this.broken)
      throw new Error(`session file ${this.path} is not writable after an earlier failure: ${this.broken.message}`)
    const bytes = Buffer.from(JSON.stringify(event) + '\n')
    try {
      writeAll(this.fd, bytes, this.size)
      if (DURABLE_TYPES.has(event.type) && defer) this.unsettled = true
      else if (DURABLE_TYPES.has(event.type)) {
        sessionFileIo.fsync(this.fd)
        this.unsettled = false
        this.synced = this.size + bytes.length
      }
    } catch (error) {
      const failure = new SessionWriteError(this.path, event.type, error)
      try {
        sessionFileIo.truncate(this.fd, this.size)
      } catch {
        this.broken = failure
      }
      throw failure
    }
    this.size += bytes.length
  }

  /**
   * The fsync that deferred durability points waited for. The events are in the file already and in memory (and
   * published), so a failure cannot be cut back: the writer refuses every later write, as after a failed cut-back.
   */
  settle(): void {
    if (this.fd === undefined || !this.unsettled) return
    try {
      sessionFileIo.fsync(this.fd)
      this.unsettled = false
      this.synced = this.size
    } catch (error) {
      this.broken = new SessionWriteError(this.path, 'a batch of events', error)
      throw this.broken
    }
  }

  sync(): void {
    if (this.fd === undefined || this.synced === this.size) return
    sessionFileIo.fsync(this.fd)
    this.synced = this.size
    this.unsettled = false
  }

  close(): void {
    if (this.fd === undefined) return
    try {
      if (this.synced !== this.size) sessionFileIo.fsync(this.fd)
    } catch {}
    closeSync(this.fd)
    this.fd = undefined
  }
}

/** Writes all of `bytes` at `position`. */
function writeAll(fd: number, bytes: Buffer, position: number): void {
  let offset = 0
  while (offset < bytes.length)
    offset += sessionFileIo.write(fd, bytes, offset, bytes.length - offset, position + offset)
}

/** Makes a new file's directory entry durable too (a no-op where directories cannot be opened). */
function syncDirectory(path: string): void {
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    fsyncSync(fd)
  } catch {
    // not supported on this platform or filesystem
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}
