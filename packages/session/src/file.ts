import { closeSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import type { SessionEvent, SessionHeader } from './types.ts'

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
  const lines: { text: string; end: number }[] = []
  let start = 0
  while (start < buffer.length) {
    const newline = buffer.indexOf(0x0a, start)
    const end = newline < 0 ? buffer.length : newline + 1
    lines.push({ text: buffer.toString('utf8', start, newline < 0 ? buffer.length : newline), end })
    start = end
  }
  if (!lines.length) throw new SessionFileError(path, 1, 'empty file (no session header)')
  let header: SessionHeader
  try {
    header = JSON.parse(lines[0]!.text)
  } catch {
    throw new SessionFileError(path, 1, 'the header line is not JSON')
  }
  if (header?.type !== 'session' || typeof header.id !== 'string') throw new SessionFileError(path, 1, 'not a Keel session header')
  const events: SessionEvent[] = []
  let validBytes = lines[0]!.end
  let tornLine: number | undefined
  for (let i = 1; i < lines.length; i++) {
    const { text, end } = lines[i]!
    const isLast = i === lines.length - 1
    const complete = buffer[end - 1] === 0x0a
    let event: SessionEvent
    try {
      event = JSON.parse(text)
    } catch {
      if (isLast) { tornLine = i + 1; break }
      throw new SessionFileError(path, i + 1, 'line is not JSON (damage inside the log, not a torn tail)')
    }
    if (!complete && isLast) { tornLine = i + 1; break }
    if (typeof event?.type !== 'string' || event.seq !== events.length) {
      throw new SessionFileError(path, i + 1, `expected event seq ${events.length}, found ${JSON.stringify(event?.seq)}`)
    }
    events.push(event)
    validBytes = end
  }
  if (lines[0]!.end === buffer.length && buffer[buffer.length - 1] !== 0x0a) {
    throw new SessionFileError(path, 1, 'the header line is torn')
  }
  return { header, events, validBytes, tornLine }
}

/** Types after which everything logged so far must survive a crash. */
const DURABLE_TYPES = new Set(['tool/result', 'turn/end', 'user/message'])

/** Appends one JSON line per event; fsyncs at the durability points so `kill -9` never loses an acknowledged result. */
export class SessionWriter {
  private fd: number | undefined

  private constructor(readonly path: string, fd: number) {
    this.fd = fd
  }

  static create(path: string, header: SessionHeader): SessionWriter {
    mkdirSync(dirname(path), { recursive: true })
    const fd = openSync(path, 'wx')
    writeSync(fd, JSON.stringify(header) + '\n')
    fsyncSync(fd)
    return new SessionWriter(path, fd)
  }

  /** Opens an existing file for appending, cutting a torn tail beyond `validBytes` first. */
  static reopen(path: string, validBytes: number): SessionWriter {
    const fd = openSync(path, 'r+')
    ftruncateSync(fd, validBytes)
    fsyncSync(fd)
    closeSync(fd)
    return new SessionWriter(path, openSync(path, 'a'))
  }

  write(event: SessionEvent): void {
    if (this.fd === undefined) throw new Error(`session file ${this.path} is closed`)
    writeSync(this.fd, JSON.stringify(event) + '\n')
    if (DURABLE_TYPES.has(event.type)) fsyncSync(this.fd)
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
