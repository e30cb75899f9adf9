// The files that decide how Keel, git, the shell or an editor behave on the next run. The agent never changes them
// on its own: the file tools ask (or refuse), the permission policy says why, and the sandbox mounts them read-only.
// One list, here, so those three cannot drift apart.
import { lstatSync, mkdirSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { keelHome, privateDir } from '@keel/session/paths'
import { readSettingsFiles } from './files.ts'
import { projectDirs, projectRoot } from './root.ts'

/**
 * Paths relative to a project folder (the root, or any folder below it); a folder covers everything inside it. Not
 * the whole of `.git/`: commands must still commit (objects, refs, index), but nothing there may run code or point
 * git at another folder's config.
 */
export const PROTECTED_PATHS: readonly string[] = [
  '.keel',
  '.mcp.json',
  '.git/config',
  '.git/commondir',
  '.git/config.worktree',
  '.git/hooks',
  '.git/info',
  '.git/modules',
  '.git/worktrees',
  '.gitmodules',
  '.envrc',
  '.vscode',
  '.idea',
  '.claude',
]

/** The built-in list plus `protectedPaths` from every settings file for `cwd` (adding to it only narrows). */
export function protectedEntries(cwd: string): string[] {
  const extra = new Set<string>()
  let files: ReturnType<typeof readSettingsFiles> = []
  try {
    files = readSettingsFiles(cwd)
  } catch {
    // A bad settings file is reported where settings are resolved; the built-in list still holds.
  }
  for (const file of files) {
    const list = file.data.protectedPaths
    if (!Array.isArray(list)) continue
    for (const entry of list)
      if (typeof entry === 'string' && entry.trim()) extra.add(entry.trim().replace(/^\.\//, '').replace(/\/+$/, ''))
  }
  return [...new Set([...PROTECTED_PATHS, ...extra])]
}

const foldCase = process.platform === 'darwin' || process.platform === 'win32'

function segments(path: string): string[] {
  return path
    .split(/[\\/]+/)
    .filter((part) => part && part !== '.')
    .map((part) => (foldCase ? part.toLowerCase() : part))
}

function within(root: string, path: string): string | undefined {
  const rel = relative(root, path)
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined
  return rel
}

/**
 * The protected entry `path` falls under (`.keel`, `.git/hooks`, or `$KEEL_HOME`), else undefined. An entry matches
 * at any depth below the project root, so a nested repository's hooks or a subfolder's `.keel` count too.
 * `entries` defaults to `protectedEntries(cwd)`.
 */
export function protectedMatch(path: string, cwd: string, entries = protectedEntries(cwd)): string | undefined {
  const absolute = resolve(cwd, path)
  const home = keelHome()
  if (within(home, absolute) !== undefined) return home
  const rel = within(projectRoot(cwd), absolute)
  if (rel === undefined) return undefined
  const parts = segments(rel)
  for (const entry of entries) {
    const want = segments(entry)
    if (!want.length) continue
    for (let i = 0; i + want.length <= parts.length; i++)
      if (want.every((part, j) => parts[i + j] === part)) return entry
  }
  return undefined
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * Files git reads whenever they exist, so a placeholder mounted over a missing one would stop every git command: a
 * sandbox cannot block their creation, only remove them afterwards.
 */
const READ_IF_PRESENT = new Set(['.git/commondir'])

/**
 * What a sandboxed command running in `cwd` must not write: every entry under each folder of `dirs` (from the project
 * root down to `cwd` unless given), and `$KEEL_HOME` (`deny`), computed from the session's own cwd on every call. An
 * entry whose folder does not exist is left out (`.git/hooks` outside a repository): the sandbox blocks a missing
 * path by mounting over its first missing part, and a `.git` mounted over would stop `git init`. `undo`: missing files
 * that cannot be mounted over (READ_IF_PRESENT) and must be removed if the command created them.
 */
export function protectedTargets(
  cwd: string,
  entries = protectedEntries(cwd),
  dirs = projectDirs(cwd),
): { deny: string[]; undo: string[] } {
  const deny = new Set<string>(isDirectory(keelHome()) ? [keelHome()] : [])
  const undo: string[] = []
  for (const dir of dirs)
    for (const entry of entries) {
      const target = join(dir, entry)
      if (!isDirectory(dirname(target))) continue
      if (READ_IF_PRESENT.has(entry) && !exists(target)) undo.push(target)
      else deny.add(target)
    }
  return { deny: [...deny], undo }
}

/**
 * What no sandboxed command may read: the person's Keel settings (a session store's URL there may hold its password)
 * when they exist, and `$KEEL_HOME/private` (the approval key, which alone makes an answer through a shared store
 * count, @keel/store-pg), made here when missing so that a key made later is hidden too. The rest of $KEEL_HOME stays
 * readable (skills' scripts, the person's AGENTS.md).
 */
export function unreadableTargets(home = keelHome()): string[] {
  const hidden = privateDir(home)
  if (isDirectory(home) && !isDirectory(hidden))
    try {
      mkdirSync(hidden, { mode: 0o700 })
    } catch {}
  return [join(home, 'settings.json'), hidden].filter(exists)
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}
