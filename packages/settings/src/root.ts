import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

/** The nearest ancestor of `cwd` (itself included) that holds `.git` (a folder, or a worktree's file); else `cwd`. */
export function projectRoot(cwd: string): string {
  const start = resolve(cwd)
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return start
  }
}

/** Every folder from the project root down to `cwd`, root first. */
export function projectDirs(cwd: string): string[] {
  const start = resolve(cwd)
  const root = projectRoot(start)
  const dirs = [start]
  for (let dir = start; dir !== root; ) {
    dir = dirname(dir)
    dirs.unshift(dir)
  }
  return dirs
}
