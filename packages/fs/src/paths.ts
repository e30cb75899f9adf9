import { lstat, readlink } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { protectedMatch } from '@keel/settings'
import type { ToolExecution } from '@keel/tools'

/** Where a tool may go: the cwd with every symlink resolved, and whether the tools are held inside it. */
export interface Scope {
  realCwd: string
  confined: boolean
}

/** A path the model named, resolved against the calling agent's working directory and checked against it. */
export interface ResolvedPath extends Scope {
  /** Absolute, `..` resolved lexically, symlinks kept: what results are named after. */
  absolute: string
  /** Every symlink followed (a missing tail appended as written): the path the tools open. */
  real: string
  /** What results call it: relative to the cwd when it lies inside, else absolute. */
  display: string
  cwd: string
}

export interface PathPolicy {
  allowOutsideCwd: boolean
}

function cwdOf(exec: Pick<ToolExecution, 'agent'>): string {
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

export class PathError extends Error {}

/** The kernel gives up after 40 links (ELOOP); so do we. */
const MAX_LINKS = 40

/**
 * Follows every symlink in an absolute path one component at a time, as the kernel would, including a dangling
 * link's target and `..` inside link targets. Where a component does not exist (yet), the rest is appended
 * lexically, so a file about to be created through a dangling link is judged by where it would really land.
 */
export async function resolveLinks(absolute: string): Promise<string> {
  const pending = absolute.split(sep).filter(Boolean).reverse()
  let current: string = sep
  let links = 0
  while (pending.length) {
    const part = pending.pop()!
    if (part === '.') continue
    if (part === '..') {
      current = dirname(current)
      continue
    }
    const next = join(current, part)
    let isLink: boolean
    try {
      isLink = (await lstat(next)).isSymbolicLink()
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return resolve(next, ...pending.reverse())
      throw error
    }
    if (!isLink) {
      current = next
      continue
    }
    if (++links > MAX_LINKS) throw new PathError(`${absolute} goes through more than ${MAX_LINKS} symlinks`)
    const target = await readlink(next)
    if (isAbsolute(target)) current = sep
    pending.push(...target.split(sep).filter(Boolean).reverse())
  }
  return current
}

const outsideHint = 'the file tools only touch files inside it (config allowOutsideCwd)'

/**
 * Resolves `path` against the agent's cwd. Outside the cwd — lexically, or once symlinks are followed — is refused
 * unless the policy allows it, so a `..` or a symlink planted in the repository cannot reach the rest of the disk.
 * This is the friendly first check; the tools check again what they actually opened (see open.ts).
 */
export async function resolvePath(
  path: string,
  exec: Pick<ToolExecution, 'agent' | 'sandbox'>,
  policy: PathPolicy,
): Promise<ResolvedPath> {
  const cwd = resolve(cwdOf(exec))
  const expanded = path === '~' ? homedir() : path.startsWith('~/') ? join(homedir(), path.slice(2)) : path
  const absolute = resolve(cwd, expanded)
  const display = displayPath(cwd, absolute)
  // Confined unless the config says otherwise, or the permission policy lifted it for this call (`--mode yolo`, or a
  // person who allowed this write outside the working directory): the mode and the rules decide, as for commands.
  const confined = !policy.allowOutsideCwd && exec.sandbox !== 'off'
  if (confined && !isInside(cwd, absolute)) {
    throw new PathError(`${path} is outside the working directory ${cwd}; ${outsideHint}`)
  }
  const [realCwd, real] = await Promise.all([resolveLinks(cwd), resolveLinks(absolute)])
  if (confined && !isInside(realCwd, real)) {
    throw new PathError(
      `${path} resolves through a symlink to ${real}, outside the working directory ${cwd}; ${outsideHint}`,
    )
  }
  return { absolute, real, display, cwd, realCwd, confined }
}

/** The error for a file that turned out to be outside once opened (a link swapped in after the first check). */
export function escapedError(display: string, where: string, scope: Scope): PathError {
  return new PathError(
    `${display} now leads to ${where}, outside the working directory ${scope.realCwd} (it changed while being opened); ${outsideHint}`,
  )
}

/**
 * Refuses a write to a protected path (@keel/settings' list: Keel's settings, MCP config, git config and hooks,
 * editor tasks) unless the permission policy lifted it for this call (level `off`: the person allowed it, or yolo).
 * The policy asks first; this holds when no policy is loaded or a call reaches the tool another way.
 */
export function refuseProtected(target: ResolvedPath, exec: Pick<ToolExecution, 'sandbox'>): void {
  if (exec.sandbox === 'off') return
  const entry = protectedMatch(target.absolute, target.cwd) ?? protectedMatch(target.real, target.realCwd)
  if (entry)
    throw new PathError(
      `${target.display} is protected (${entry}): it decides how Keel, git or an editor behave next, so only the person may allow writing it`,
    )
}
