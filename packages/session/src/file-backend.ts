import { closeSync, linkSync, lstatSync, readdirSync, readSync, unlinkSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import type { LockedLog, LogWriter, SessionBackend, SessionSummary } from './backend.ts'
import { backscan } from './backscan.ts'
import { parseHeader, readSessionFile, SessionWriter } from './file.ts'
import { acquireLock } from './lock.ts'
import { cwdSlug, sessionPath, sessionsRoot } from './paths.ts'
import { checkSessionEntry, errnoText, openSessionFile, SessionFileError } from './regular.ts'
import type { SessionEvent, SessionHeader } from './types.ts'

/** The embedded default: one JSONL file per session under `$KEEL_HOME/sessions/<cwd-slug>/`, one writer by lock file. */
export class FileBackend implements SessionBackend {
  reserve(header: SessionHeader): string {
    const path = sessionPath(header.cwd, header.id)
    if (lstatSync(path, { throwIfNoEntry: false })) throw new Error(`session ${header.id} already exists (${path})`)
    return path
  }

  create(header: SessionHeader): LogWriter {
    const path = sessionPath(header.cwd, header.id)
    const release = acquireLock(path + '.lock')
    let writer: SessionWriter
    try {
      writer = SessionWriter.create(path, header)
    } catch (error) {
      release()
      if ((error as NodeJS.ErrnoException).code === 'EEXIST')
        throw new Error(`session ${header.id} already exists (${path})`)
      throw error
    }
    return fileWriter(writer, release)
  }

  lock(id: string): LockedLog | undefined {
    const path = this.locate(id)
    if (!path) return undefined
    const release = acquireLock(path + '.lock')
    try {
      const file = loadFile(path, id)
      const repairs = file.tornLine
        ? [`${path}: dropped a torn last line (line ${file.tornLine}); the file now ends at the last whole event`]
        : []
      return {
        log: { header: file.header, events: file.events, where: path, repairs },
        resume: () => fileWriter(SessionWriter.reopen(path, file.validBytes), release),
        release,
      }
    } catch (error) {
      release()
      throw error
    }
  }

  read(id: string) {
    const path = this.locate(id)
    if (!path) return undefined
    const file = loadFile(path, id)
    return { header: file.header, events: file.events, where: path, repairs: [] }
  }

  /** The first line only (at most 64 KB), from a regular file of this user: a FIFO named like a session is not read. */
  header(id: string): SessionHeader | undefined {
    const path = this.locate(id)
    if (!path) return undefined
    let opened: ReturnType<typeof openSessionFile>
    try {
      opened = openSessionFile(path, 'read', { anySize: true })
    } catch {
      return undefined
    }
    try {
      const buffer = Buffer.allocUnsafe(TITLE_BYTES)
      const size = readSync(opened.fd, buffer, 0, buffer.length, 0)
      const end = buffer.subarray(0, size).indexOf(0x0a)
      return parseHeader(path, buffer.toString('utf8', 0, end < 0 ? size : end))
    } catch {
      return undefined
    } finally {
      closeSync(opened.fd)
    }
  }

  /** The entry named like the session, whatever it is (reading it then says what is wrong with it). */
  locate(id: string): string | undefined {
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

  list(cwd: string | undefined, skip: (path: string, problem: string) => void): SessionSummary[] {
    const root = sessionsRoot()
    const dirs = cwd ? [join(root, cwdSlug(cwd))] : entries(root).map((dir) => join(root, dir))
    const out: SessionSummary[] = []
    for (const dir of dirs) {
      for (const name of entries(dir)) {
        if (!name.endsWith('.jsonl')) continue
        const summary = summarize(join(dir, name), skip)
        if (summary && (!cwd || summary.cwd === resolve(cwd))) out.push(summary)
      }
    }
    return out
  }

  backscan<T>(id: string, visit: (event: SessionEvent) => T | undefined) {
    const path = this.locate(id)
    return path ? backscan(path, visit) : undefined
  }

  /** Written beside its place and linked in whole (a link never replaces an entry): never half a log, never over one. */
  write(header: SessionHeader, events: readonly SessionEvent[]): void {
    const path = sessionPath(header.cwd, header.id)
    const draft = `${path}.${process.pid}.copy`
    const writer = SessionWriter.create(draft, header)
    try {
      try {
        // One fsync for the whole copy, before the link makes it visible: it is all or nothing anyway.
        for (const event of events) writer.write(event, true)
        writer.sync()
      } finally {
        writer.close()
      }
      linkSync(draft, path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST')
        throw new Error(`session ${header.id} already exists (${path})`)
      throw error
    } finally {
      try {
        unlinkSync(draft)
      } catch {}
    }
  }

  damaged(path: string, seq: number, problem: string): Error {
    return new SessionFileError(path, seq + 2, problem) // line 1 is the header
  }
}

function fileWriter(writer: SessionWriter, release: () => void): LogWriter {
  return {
    where: writer.path,
    write: (event, defer) => writer.write(event, defer),
    settle: () => writer.settle(),
    close() {
      writer.close()
      release()
    },
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
