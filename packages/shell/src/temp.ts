// A private temp folder per session: its commands' TMPDIR, and the only temp the workspace sandbox lets them write.
// The host's /tmp holds other programs' caches (tsx keeps compiled code there); a sandboxed command must not reach them.
import { accessSync, constants, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'

export class SessionTemps {
  private readonly dirs = new Map<string, string>()

  /** The session's folder (0700), created on its first command. */
  of(session: string): string {
    let dir = this.dirs.get(session)
    if (!dir) {
      dir = mkdtempSync(join(tempBase(), 'keel-session-'))
      this.dirs.set(session, dir)
    }
    return dir
  }

  /** Removes every folder handed out (the plugin is going away, and its sessions with it). */
  clear(): void {
    for (const dir of this.dirs.values()) rmSync(dir, { recursive: true, force: true })
    this.dirs.clear()
  }
}

/**
 * Where session folders go: the system temp dir, unless it lies under /dev (TMPDIR=/dev/shm/…). The sandbox gives
 * each command a fresh /dev, so a folder there would not exist inside it; the next writable place outside /dev
 * is used instead.
 */
export function tempBase(): string {
  const candidates = [tmpdir(), process.env.XDG_RUNTIME_DIR, '/var/tmp', '/tmp', homedir()]
  for (const dir of candidates) if (dir && usable(dir)) return dir
  return tmpdir()
}

function usable(dir: string): boolean {
  try {
    const real = realpathSync.native(dir)
    if (real === '/dev' || real.startsWith('/dev/')) return false
    accessSync(real, constants.W_OK)
    return statSync(real).isDirectory()
  } catch {
    return false
  }
}
