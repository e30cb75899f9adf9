// A sandbox started ahead of its command (`prepare` in index.ts) fixed its mounts when it started: a bind follows the
// file or folder it was made on, not its name. So it is used only if the names a wrap protects still lead to what
// they led to then: no protected path, and no folder above one, replaced (an editor's write-and-rename, a `mv`), made
// or removed (a removed placeholder takes its mount with it). Identity, not content: a file written in place is the
// one the bind shows.
import { lstatSync } from 'node:fs'
import { dirname } from 'node:path'

/** What each of `paths`, and every folder above it, is on disk now: device, inode and type, or absent. */
export function diskState(paths: readonly string[]): string {
  const seen = new Map<string, string>()
  for (const path of paths) {
    for (let at = path; !seen.has(at); at = dirname(at)) {
      const stat = lstatSync(at, { throwIfNoEntry: false })
      seen.set(at, stat ? `${stat.dev}:${stat.ino}:${stat.mode}` : '-')
      if (dirname(at) === at) break
    }
  }
  return [...seen].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).join('\n')
}
