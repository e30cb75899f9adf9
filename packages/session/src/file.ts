import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { isSessionId, SESSION_FORMAT_VERSION, type SessionEvent, type SessionHeader } from './types.ts'

export class SessionFileError extends Error {
  constructor(readonly path: string, readonly line: number, problem: string) {
    super(`${path}:${line}: ${problem}`)
    this.name = 'SessionFileError'
  }
}

export interface LoadedSessionFile {
  header: SessionHeader
  events: SessionEvent[]
  /** Byte length of the complete, valid prefix; a torn tail lies beyond it. */
  validBytes: number
  /** Set when the last line was torn and has been left out. */
  tornLine?: number
}

/** Parses a session file. Only a torn last line is tolerated; any other damage is refused naming file and line. */
export function readSessionFile(path: string): LoadedSessionFile {
  const buffer = readFileSync(path)
  if (!buffer.length) throw new SessionFileError(path, 1, 'empty file (no session header)')
  // One decode and one split: a newline byte never occurs inside a multi-byte UTF-8 sequence, so the pieces are
  // exactly the lines. The last piece is what follows the last newline: empty for a whole file, else a torn line.
  const lines = buffer.toString('utf8').split('\n')
  const whole = buffer[buffer.length - 1] === 0x0a
  let header: SessionHeader
  try {
    header = JSON.parse(lines[0]!)
  } catch {
    throw new SessionFileError(path, 1, 'the header line is not JSON')
  }
  if (header?.type !== 'session' || !isSessionId(header.id)) throw new SessionFileError(path, 1, 'not a Keel session header')
  if (typeof header.version === 'number' && header.version > SESSION_FORMAT_VERSION) {
    throw new SessionFileError(path, 1, `written in session format ${header.version}; this Keel reads up to format ${SESSION_FORMAT_VERSION}`)
  }
  if (lines.length === 1) throw new SessionFileError(path, 1, 'the header line is torn')
  const events: SessionEvent[] = []
  let validBytes = buffer.length
  let tornLine: number | undefined
  const last = lines.length - 1 // index of the piece after the last newline
  for (let i = 1; i < last; i++) {
    let event: SessionEvent
    try {
      event = JSON.parse(lines[i]!)
    } catch {
      // A whole last line that is not JSON is treated as torn too (a filesystem may leave junk at the end of a
      // file after a power cut); anywhere else it is damage.
      if (i === last - 1 && whole) {
        tornLine = i + 1
        validBytes = buffer.lastIndexOf(0x0a, buffer.length - 2) + 1
        break
      }
      throw new SessionFileError(path, i + 1, 'line is not JSON (damage inside the log, not a torn tail)')
    }
    if (typeof event?.type !== 'string' || event.seq !== events.length) {
      throw new SessionFileError(path, i + 1, `expected event seq ${events.length}, found ${JSON.stringify(event?.seq)}`)
    }
    events.push(event)
  }
  if (!whole) {
    tornLine = last + 1
    validBytes = buffer.lastIndexOf(0x0a) + 1
  }
  return { header, events, validBytes, tornLine }
}

/** Types after which everything logged so far must survive a crash. */
const DURABLE_TYPES = new Set(['tool/result', 'turn/end', 'user/message'])

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

  private constructor(readonly path: string, fd: number, size: number) {
    this.fd = fd
    this.size = size
  }

  static create(path: string, header: SessionHeader): SessionWriter {
    mkdirSync(dirname(path), { recursive: true })
    const fd = openSync(path, 'wx')
    try {
      const bytes = Buffer.from(JSON.stringify(header) + '\n')
      writeAll(fd, bytes)
      fsyncSync(fd)
      syncDirectory(dirname(path))
      return new SessionWriter(path, fd, bytes.length)
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  /** Opens an existing file for appending, cutting a torn tail beyond `validBytes` first. */
  static reopen(path: string, validBytes: number): SessionWriter {
    const fd = openSync(path, 'r+')
    try {
      if (fstatSync(fd).size !== validBytes) {
        ftruncateSync(fd, validBytes)
        fsyncSync(fd)
      }
    } finally {
      closeSync(fd)
    }
    return new SessionWriter(path, openSync(path, 'a'), validBytes)
  }

  write(event: SessionEvent): void {
    if (this.fd === undefined) throw new Error(`session file ${this.path} is closed`)
    if (this.broken) throw new Error(`session file ${this.path} is not writable after an earlier failure: ${this.broken.message}`)
    const bytes = Buffer.from(JSON.stringify(event) + '\n')
    try {
      writeAll(this.fd, bytes)
      if (DURABLE_TYPES.has(event.type)) fsyncSync(this.fd)
    } catch (error) {
      try {
        ftruncateSync(this.fd, this.size)
      } catch {
        this.broken = error as Error
      }
      throw error
    }
    this.size += bytes.length
  }

  sync(): void {
    if (this.fd !== undefined) fsyncSync(this.fd)
  }

  close(): void {
    if (this.fd === undefined) return
    try { fsyncSync(this.fd) } catch {}
    closeSync(this.fd)
    this.fd = undefined
  }
}

function writeAll(fd: number, bytes: Buffer): void {
  let offset = 0
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset)
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
