// The files the runtime always denies writing because they would run code later (shell rc files, git hooks and
// config, editor and MCP settings), found from the SESSION's cwd. The runtime finds them by a ripgrep scan of the
// process's cwd (linux-sandbox-utils.js, linuxGetMandatoryDenyPaths), which is not the session's under --cwd, in
// ACP and with serve --all; its wrap takes a cwd but does not use it on Linux. So Keel finds the same names, by the
// runtime's own lists, at the runtime's depth, below the wrap's cwd, and passes them as denyWrite.
import type { Dirent } from 'node:fs'
import { lstat, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * How deep below the cwd dangerous names are looked for: the runtime's `mandatoryDenySearchDepth` (its default, 3,
 * which Keel also sets). A dangerous file down to this depth; a dangerous folder, or a repository's hooks and config,
 * one level higher up (`sub/.git/config`, not `a/sub/.git/config`), as the runtime counts.
 */
const SEARCH_DEPTH = 3

/** What is denied inside a `.git` folder, in the cwd (linuxGetCwdMandatoryDenyPaths) and below it (the scan). */
const IN_GIT = ['hooks', 'config']

/** Folders read at once: enough to keep the thread pool busy, few enough to bound open handles. */
const IN_FLIGHT = 16

interface Names {
  /** The runtime's DANGEROUS_FILES, lower-cased (it matches them without regard to case). */
  files: Set<string>
  /** getDangerousDirectories(): `.vscode`, `.claude/commands`…, each split into lower-cased segments. */
  dirs: string[][]
  /** The same, as written, for the cwd's own entries. */
  top: string[]
}

let names: Promise<Names> | undefined

/** The runtime's own lists (not restated here), loaded with the rest of its code, on the first wrap. */
function runtimeNames(): Promise<Names> {
  names ??= import('@anthropic-ai/sandbox-runtime/dist/sandbox/sandbox-utils.js').then((utils) => ({
    files: new Set(utils.DANGEROUS_FILES.map((name) => name.toLowerCase())),
    dirs: utils.getDangerousDirectories().map((name) => name.toLowerCase().split('/')),
    top: [...utils.DANGEROUS_FILES, ...utils.getDangerousDirectories()],
  }))
  names.catch(() => {
    names = undefined
  })
  return names
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}

/**
 * The paths below `cwd` that a sandboxed command must not write, as the runtime computes them for its own cwd: in the
 * cwd itself every dangerous name whether or not it exists yet (the runtime blocks a missing one by mounting a
 * placeholder over it), `.git` itself when it is a file (a worktree's pointer), its hooks and config when it is a
 * folder; below the cwd, the dangerous names that exist, down to {@link SEARCH_DEPTH}, outside `node_modules`, and
 * every folder of this user's that cannot be read (what it holds is not known; the command could make it readable
 * again). A superset of the runtime's scan: names are matched whatever their type (ripgrep lists files only, so an
 * empty `sub/.vscode/` or a link named `.bashrc` escaped it), and a nested `.git` folder counts without its `HEAD`.
 */
export async function dangerousPaths(cwd: string, depth = SEARCH_DEPTH): Promise<string[]> {
  const { files, dirs, top } = await runtimeNames()
  const found = new Set<string>(top.map((name) => join(cwd, name)))
  const dotGit = join(cwd, '.git')
  try {
    if ((await stat(dotGit)).isDirectory()) for (const name of IN_GIT) found.add(join(dotGit, name))
    else found.add(dotGit)
  } catch {
    // No .git: nothing is denied there, or `git init` could not make it.
  }
  // Level by level: `level` holds folders `rel.length` deep, whose entries are one deeper.
  let level: { path: string; rel: string[] }[] = [{ path: cwd, rel: [] }]
  for (let read = 0; read < depth && level.length; read++) {
    const next: typeof level = []
    const visit = async ({ path, rel }: (typeof level)[number]) => {
      let entries: Dirent[]
      try {
        entries = await readdir(path, { withFileTypes: true })
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (rel.length && (code === 'EACCES' || code === 'EPERM')) {
          const info = await lstat(path).catch(() => undefined)
          if (info?.isDirectory() && info.uid === process.getuid?.()) found.add(path)
        }
        return
      }
      for (const entry of entries) {
        if (entry.name === 'node_modules') continue
        const below = [...rel, entry.name]
        const at = join(path, entry.name)
        const lower = below.map((part) => part.toLowerCase())
        if (below.length <= depth && files.has(lower.at(-1)!)) found.add(at)
        if (!entry.isDirectory() && !entry.isSymbolicLink()) continue
        // A dangerous folder's name starts at most depth - 2 segments down (`sub/.vscode`, `sub/.claude/commands`).
        for (const name of dirs) {
          const start = below.length - name.length
          if (start >= 0 && start <= depth - 2 && name.every((part, i) => lower[start + i] === part)) found.add(at)
        }
        if (lower.at(-1) === '.git' && below.length - 1 <= depth - 2 && (await isDirectory(at)))
          for (const name of IN_GIT) found.add(join(at, name))
        if (entry.isDirectory() && below.length < depth) next.push({ path: at, rel: below })
      }
    }
    for (let i = 0; i < level.length; i += IN_FLIGHT) await Promise.all(level.slice(i, i + IN_FLIGHT).map(visit))
    level = next
  }
  return [...found]
}
