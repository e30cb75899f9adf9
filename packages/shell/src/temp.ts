// A private temp folder per session: its commands' TMPDIR, and the only temp the workspace sandbox lets them write.
// The host's /tmp holds other programs' caches (tsx keeps compiled code there); a sandboxed command must not reach them.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export class SessionTemps {
  private readonly dirs = new Map<string, string>()

  /** The session's folder (0700), created on its first command. */
  of(session: string): string {
    let dir = this.dirs.get(session)
    if (!dir) {
      dir = mkdtempSync(join(tmpdir(), 'keel-session-'))
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
