import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
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

/** One writer per session: an exclusive lock file holding the pid; a stale lock of a dead pid is taken over. */
export function acquireLock(path: string): () => void {
  mkdirSync(dirname(path), { recursive: true })
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      let released = false
      return () => {
        if (released) return
        released = true
        try { unlinkSync(path) } catch {}
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      let pid = NaN
      try { pid = Number.parseInt(readFileSync(path, 'utf8'), 10) } catch {}
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) throw new SessionLockedError(path, pid)
      try { unlinkSync(path) } catch {}
    }
  }
  throw new Error(`could not take the session lock ${path}`)
}
