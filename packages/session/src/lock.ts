import { closeSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

export class SessionLockedError extends Error {
  constructor(readonly path: string, readonly pid: number) {
    super(`session is open in another process (pid ${pid}); lock file ${path}`)
    this.name = 'SessionLockedError'
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

let counter = 0

/** Puts the lock in place with its content, or throws EEXIST. Falls back to create-then-write where hard links are not supported. */
function placeLock(draft: string, path: string): void {
  try {
    linkSync(draft, path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error
    const fd = openSync(path, 'wx')
    try { writeSync(fd, String(process.pid)) } finally { closeSync(fd) }
  }
}

/**
 * One writer per session: a lock file holding the writer's pid. The file appears with its pid already in it (written
 * to a private file, then hard-linked into place, which fails if a lock exists), so a reader never sees an empty
 * lock. A lock whose pid is dead is stale and is taken over.
 */
export function acquireLock(path: string): () => void {
  mkdirSync(dirname(path), { recursive: true })
  const draft = `${path}.${process.pid}.${++counter}.tmp`
  const fd = openSync(draft, 'w')
  try {
    writeSync(fd, String(process.pid))
  } finally {
    closeSync(fd)
  }
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        placeLock(draft, path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        const pid = readPid(path)
        if (pid !== undefined && alive(pid)) throw new SessionLockedError(path, pid)
        // Stale (its holder died) or unreadable. Remove it only if it still names the same dead holder, so a lock
        // another process has just taken over is left alone.
        if (readPid(path) === pid) {
          try { unlinkSync(path) } catch {}
        }
        continue
      }
      let released = false
      return () => {
        if (released) return
        released = true
        if (readPid(path) !== process.pid) return
        try { unlinkSync(path) } catch {}
      }
    }
  } finally {
    try { unlinkSync(draft) } catch {}
  }
  throw new Error(`could not take the session lock ${path}`)
}
