import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { ensureDirectory, errnoText, SessionFileError } from './regular.ts'

/** Who holds a lock: the pid, and what tells that process apart from a later one that reuses its pid. */
export interface LockHolder {
  pid: number
  /** Field 22 of `/proc/<pid>/stat` (clock ticks since boot), where /proc exists. */
  startTime?: string
  /** `/proc/sys/kernel/random/boot_id`: a pid from an earlier boot names nobody now. */
  bootId?: string
  /** Epoch ms when the lock was taken. */
  since?: number
}

export class SessionLockedError extends Error {
  readonly pid: number
  constructor(
    readonly path: string,
    readonly holder: LockHolder,
  ) {
    const since = holder.since
      ? `, since ${new Date(holder.since).toISOString().replace('T', ' ').slice(0, 19)} UTC`
      : ''
    super(`session is open in another process (pid ${holder.pid}${since}); lock file ${path}`)
    this.name = 'SessionLockedError'
    this.pid = holder.pid
  }
}

/** State and start time of a process from /proc, or undefined where /proc does not have it. */
function procStat(pid: number): { state: string; startTime: string } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // Field 2 (the command name) is in parentheses and may itself hold spaces and parentheses: split after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const state = rest[0]
  const startTime = rest[19] // field 22; `rest` starts at field 3
  return state && startTime ? { state, startTime } : undefined
}

let cachedBootId: string | null | undefined
function bootId(): string | undefined {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null
    } catch {
      cachedBootId = null
    }
  }
  return cachedBootId ?? undefined
}

function selfHolder(): LockHolder {
  const stat = procStat(process.pid)
  const boot = bootId()
  return {
    pid: process.pid,
    ...(stat ? { startTime: stat.startTime } : {}),
    ...(boot ? { bootId: boot } : {}),
    since: Date.now(),
  }
}

/**
 * Whether the holder still runs. A zombie (killed but not yet reaped by its parent) is dead: `kill(pid, 0)` still
 * succeeds on it, which is why the pid alone is not enough. A pid whose start time or boot differs from what the lock
 * recorded now names another process.
 */
export function holderAlive(holder: LockHolder): boolean {
  if (holder.bootId && bootId() && holder.bootId !== bootId()) return false
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  const stat = procStat(holder.pid)
  if (!stat) return true // no /proc (macOS, or the pid is in another namespace): trust kill(0)
  if (stat.state === 'Z' || stat.state === 'X') return false
  if (holder.startTime && stat.startTime !== holder.startTime) return false
  return true
}

const MAX_LOCK_BYTES = 4096

/**
 * Reads a lock without following a symlink or blocking on a FIFO, and at most a few KB of it; undefined when it is
 * missing, not a regular file or garbled (its writer died mid-write, or someone put something else there).
 */
export function readLock(path: string): LockHolder | undefined {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined
    const buffer = Buffer.alloc(MAX_LOCK_BYTES)
    const text = buffer.toString('utf8', 0, readSync(fd, buffer, 0, buffer.length, 0)).trim()
    return parseLock(text)
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}

function parseLock(text: string): LockHolder | undefined {
  if (/^\d+$/.test(text)) return positive(Number(text)) ? { pid: Number(text) } : undefined // a lock from before start times were kept
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!value || typeof value !== 'object') return undefined
  const { pid, startTime, bootId, since } = value as Record<string, unknown>
  if (!positive(pid)) return undefined
  return {
    pid,
    ...(typeof startTime === 'string' ? { startTime } : {}),
    ...(typeof bootId === 'string' ? { bootId } : {}),
    ...(typeof since === 'number' && Number.isFinite(since) ? { since } : {}),
  }
}

function positive(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0
}

const sameHolder = (a: LockHolder | undefined, b: LockHolder | undefined) =>
  a?.pid === b?.pid && a?.startTime === b?.startTime && a?.since === b?.since

let counter = 0
const DRAFT = /^(.*)\.(\d+)\.\d+\.tmp$/

/** Removes drafts (`<lock>.<pid>.<n>.tmp`) left by a writer killed while taking this lock. */
function sweepDrafts(path: string): void {
  const name = basename(path)
  let names: string[]
  try {
    names = readdirSync(dirname(path))
  } catch {
    return
  }
  for (const entry of names) {
    const match = DRAFT.exec(entry)
    if (!match || match[1] !== name || Number(match[2]) === process.pid) continue
    if (!holderAlive({ pid: Number(match[2]) }))
      try {
        unlinkSync(join(dirname(path), entry))
      } catch {}
  }
}

/** Writes the draft with O_EXCL (never through a symlink someone put there); on any failure it is removed again. */
function writeDraft(draft: string, content: string): void {
  const fd = openSync(draft, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
  try {
    const bytes = Buffer.from(content)
    let offset = 0
    while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset)
  } catch (error) {
    closeSync(fd)
    try {
      unlinkSync(draft)
    } catch {}
    throw error
  }
  closeSync(fd)
}

/** Puts the lock in place with its content, or throws EEXIST. Falls back to create-then-write where hard links are not supported. */
function placeLock(draft: string, path: string, content: string): void {
  try {
    linkSync(draft, path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error
    writeDraft(path, content)
  }
}

/**
 * One writer per session: a lock file naming the writer (pid, start time, boot id, since when). The file appears with
 * its content already in it (written to a private draft, then hard-linked into place, which fails if a lock exists),
 * so a reader never sees an empty lock; the draft is removed on every path. A lock whose holder is dead (exited, a
 * zombie, or a pid now reused by another process) is stale and is taken over.
 */
export function acquireLock(path: string): () => void {
  ensureDirectory(dirname(path))
  sweepDrafts(path)
  const self = selfHolder()
  const content = JSON.stringify(self)
  const draft = `${path}.${process.pid}.${++counter}.tmp`
  try {
    writeDraft(draft, content)
  } catch (error) {
    throw new SessionFileError(path, 0, `cannot take the session lock: ${errnoText(error)}`)
  }
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        placeLock(draft, path, content)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
          throw new SessionFileError(path, 0, `cannot take the session lock: ${errnoText(error)}`)
        const holder = readLock(path)
        if (holder && holderAlive(holder)) throw new SessionLockedError(path, holder)
        // Stale (its holder died) or unreadable. Remove it only if it still names the same dead holder, so a lock
        // another process has just taken over is left alone.
        if (sameHolder(readLock(path), holder)) {
          try {
            unlinkSync(path)
          } catch {}
        }
        continue
      }
      let released = false
      return () => {
        if (released) return
        released = true
        if (!sameHolder(readLock(path), self)) return
        try {
          unlinkSync(path)
        } catch {}
      }
    }
  } finally {
    try {
      unlinkSync(draft)
    } catch {}
  }
  throw new Error(`could not take the session lock ${path}`)
}
