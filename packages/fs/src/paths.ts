import { realpath } from 'node:fs/promises'
import { homedir } from 'node:os'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { ToolExecution } from '@keel/tools'

/** A path the model named, resolved against the calling agent's working directory and checked against it. */
export interface ResolvedPath {
  /** Absolute, `..` resolved; symlinks kept (this is the path the tools open). */
  absolute: string
  /** What results call it: relative to the cwd when it lies inside, else absolute. */
  display: string
  cwd: string
}

export interface PathPolicy {
  allowOutsideCwd: boolean
}

export function cwdOf(exec: Pick<ToolExecution, 'agent'>): string {
  return exec.agent?.cwd ?? process.cwd()
}

export function isInside(root: string, target: string): boolean {
  const rel = relative(root, target)
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
}

/** Relative to the cwd when inside it, with `/` separators; `.` for the cwd itself. */
export function displayPath(cwd: string, absolute: string): string {
  if (!isInside(cwd, absolute)) return absolute
  return relative(cwd, absolute).split(sep).join('/') || '.'
}

/** Resolves symlinks for the longest prefix that exists, so a path that is about to be created can be checked too. */
async function realpathOfNearest(path: string): Promise<string> {
  try {
    return await realpath(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error
    const parent = dirname(path)
    if (parent === path) return path
    return join(await realpathOfNearest(parent), basename(path))
  }
}

export class PathError extends Error {}

/**
 * Resolves `path` against the agent's cwd. Outside the cwd — lexically, or once symlinks are followed — is refused
 * unless the policy allows it, so a `..` or a symlink planted in the repository cannot reach the rest of the disk.
 */
export async function resolvePath(path: string, exec: Pick<ToolExecution, 'agent'>, policy: PathPolicy): Promise<ResolvedPath> {
  const cwd = resolve(cwdOf(exec))
  const expanded = path === '~' ? homedir() : path.startsWith('~/') ? join(homedir(), path.slice(2)) : path
  const absolute = resolve(cwd, expanded)
  const display = displayPath(cwd, absolute)
  if (policy.allowOutsideCwd) return { absolute, display, cwd }
  if (!isInside(cwd, absolute)) {
    throw new PathError(`${path} is outside the working directory ${cwd}; the file tools only touch files inside it (config allowOutsideCwd)`)
  }
  const [realCwd, realTarget] = await Promise.all([realpathOfNearest(cwd), realpathOfNearest(absolute)])
  if (!isInside(realCwd, realTarget)) {
    throw new PathError(`${path} resolves through a symlink to ${realTarget}, outside the working directory ${cwd}; the file tools only touch files inside it (config allowOutsideCwd)`)
  }
  return { absolute, display, cwd }
}
