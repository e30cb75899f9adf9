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
export const SEARCH_DEPTH = 3

/** What is denied inside a `.git` folder, in the cwd (linuxGetCwdMandatoryDenyPaths) and below it (the scan). */
const IN_GIT = ['hooks', 'config']

/** Folders read at once: enough to keep the thread pool busy, few enough to bound open handles. */
const IN_FLIGHT = 16

/** The runtime gives its ripgrep scan ten seconds; a scan that takes longer refuses the wrap, never half-protects. */
const SCAN_LIMIT_MS = 10_000

interface Names {
  /** The runtime's DANGEROUS_FILES, lower-cased (it matches them without regard to case). */
  files: Set<string>
  /** getDangerousDirectories(): `.vscode`, `.claude/commands`…, each split into lower-cased segments. */
  dirs: string[][]
  /** The same, as written, for the cwd's own entries. */
  top: string[]
}

export interface Dangerous {
  paths: string[]
  /** The folders below the cwd that hold a `.git` folder, where the scan denied its hooks and config. */
  repos: string[]
}

/** A folder to read, and its path below the cwd in lower-cased segments. */
interface Folder {
  path: string
  below: string[]
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
export async function dangerousPaths(cwd: string, depth = SEARCH_DEPTH): Promise<Dangerous> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`looking for the files it must protect in ${cwd} took over ${SCAN_LIMIT_MS / 1000} s`)),
      SCAN_LIMIT_MS,
    )
  })
  try {
    return await Promise.race([scan(cwd, depth), late])
  } finally {
    clearTimeout(timer)
  }
}

async function scan(cwd: string, depth: number): Promise<Dangerous> {
  const { files, dirs, top } = await runtimeNames()
  const found = new Set<string>(top.map((name) => join(cwd, name)))
  const repos: string[] = []
  const dotGit = join(cwd, '.git')
  try {
    if ((await stat(dotGit)).isDirectory()) for (const name of IN_GIT) found.add(join(dotGit, name))
    else found.add(dotGit)
  } catch {
    // No .git: nothing is denied there, or `git init` could not make it.
  }
  const queue: Folder[] = [{ path: cwd, below: [] }]
  const visit = async ({ path, below }: Folder) => {
    let entries: Dirent[]
    try {
      entries = await readdir(path, { withFileTypes: true })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (below.length && (code === 'EACCES' || code === 'EPERM')) {
        const info = await lstat(path).catch(() => undefined)
        if (info?.isDirectory() && info.uid === process.getuid?.()) found.add(path)
      }
      return
    }
    // How many segments below the cwd each entry is.
    const at = below.length + 1
    for (const entry of entries) {
      const name = entry.name
      if (name === 'node_modules') continue
      const lower = name.toLowerCase()
      if (files.has(lower)) found.add(join(path, name))
      const folder = entry.isDirectory()
      if (!folder && !entry.isSymbolicLink()) continue
      const segments = [...below, lower]
      // A dangerous folder's name starts at most depth - 2 segments down (`sub/.vscode`, `sub/.claude/commands`).
      for (const want of dirs) {
        const start = at - want.length
        if (start >= 0 && start <= depth - 2 && want.every((part, i) => segments[start + i] === part))
          found.add(join(path, name))
      }
      if (lower === '.git' && at - 1 <= depth - 2 && (folder || (await isDirectory(join(path, name))))) {
        for (const inside of IN_GIT) found.add(join(path, name, inside))
        if (below.length) repos.push(path)
      }
      if (folder && at < depth) queue.push({ path: join(path, name), below: segments })
    }
  }
  // A few folders in flight at a time, each worker taking the next from the queue as it goes.
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) await visit(next)
  }
  // The queue grows while the first folder is read: start one worker, then the rest once there is work for them.
  await visit(queue.shift()!)
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  return { paths: [...found], repos }
}
