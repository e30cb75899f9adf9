// Keel's own walk and read (glob, ls and `@` completion always, grep when there is no ripgrep): the entries under a
// root that .gitignore lets through, and the files' contents, checked as open.ts checks a read. A promise per directory entry and seven thread-pool
// round trips per file made the fallback 12–16× a bare `rg` on 20,000 files, where a file read is a few microseconds
// when synchronous: directories are read a few at a time on the thread pool (a promise per directory is cheap), files
// synchronously, and the judging and reading run in slices of a few milliseconds with a turn of the loop between.
import {
  closeSync,
  constants,
  type Dirent,
  existsSync,
  fstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
} from 'node:fs'
import { isAbsolute, join, relative, sep } from 'node:path'
import { mountPointsNow } from '@keel/sandbox/mount-points'
import { readdir } from 'node:fs/promises'
import { Slicer } from './limit.ts'
import type { Scope } from './paths.ts'
import { sniff, SNIFF_BYTES } from './sniff.ts'
import { type DirectoryRules, loadRules, readText } from './gitignore.ts'

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants

/** Directories read at once. */
const DIRS_IN_FLIGHT = 16

/** Never worth walking into or listing, ignored or not. */
const ALWAYS_SKIPPED = new Set(['node_modules', '.git'])

/**
 * Walks the directories under `root`: symlinks are not followed, node_modules and .git are skipped, and each
 * directory is judged against the .gitignore files on the way down, so an ignored one is never opened and its
 * .gitignore never read. `deep` is how many levels are read (1: the root only). `visit` gets each directory's entries (`dir` relative, `''` for the root)
 * and what the .gitignore files say about them; it returns false to stop the walk, which then returns false.
 */
export async function eachDirectory(
  root: string,
  scope: Scope,
  signal: AbortSignal,
  visit: (dir: string, entries: Dirent[], rules: DirectoryRules) => boolean,
  deep = Number.POSITIVE_INFINITY,
): Promise<boolean> {
  const rules = await loadRules(root, scope.realCwd, scope)
  const slicer = new Slicer(signal)
  const placeholders = mountPointsUnder(root)
  // A level at a time, several directories read at once on the thread pool while the last ones are judged here: a
  // promise per directory is cheap, where one per entry was not.
  let level = ['']
  for (let depth = 1; level.length; depth++) {
    const next: string[] = []
    for (let at = 0; at < level.length; at += DIRS_IN_FLIGHT) {
      const dirs = level.slice(at, at + DIRS_IN_FLIGHT)
      const read = await Promise.all(
        dirs.map((dir) => readdir(dir ? join(root, dir) : root, { withFileTypes: true }).catch(() => undefined)),
      )
      if (signal.aborted) throw signal.reason
      for (let i = 0; i < dirs.length; i++) {
        const dir = dirs[i]!
        const found = read[i]
        if (!found) continue
        const entries = placeholders.size
          ? found.filter((entry) => !placeholders.has(dir ? `${dir}/${entry.name}` : entry.name))
          : found
        // The root's own .gitignore is loaded with the rules above it.
        if (dir && entries.some((entry) => entry.name === '.gitignore' && entry.isFile())) {
          const text = await readText(join(root, dir, '.gitignore'), scope)
          if (text !== undefined) rules.add(join(root, dir.split('/').join(sep)), text)
        }
        const here = rules.in(dir)
        if (!visit(dir, entries, here)) return false
        if (depth < deep)
          for (const entry of entries) {
            const name = entry.name
            if (!entry.isDirectory() || ALWAYS_SKIPPED.has(name)) continue
            if (!here.ignores(name, true)) next.push(dir ? `${dir}/${name}` : name)
          }
        await slicer.tick()
      }
    }
    level = next
  }
  return true
}

/**
 * The sandbox's empty mount points for missing protected files under `root` (relative, `/`-separated), while a
 * sandboxed command runs or a spare waits for the next (`@keel/sandbox/mount-points`): not the person's files, so no
 * listing shows them to the model or the person.
 */
function mountPointsUnder(root: string): Set<string> {
  const under = new Set<string>()
  const points = mountPointsNow()
  if (!points.size) return under
  let real: string
  try {
    real = realpathSync(root)
  } catch {
    return under
  }
  for (const point of points) {
    let at: string
    try {
      at = realpathSync(point)
    } catch {
      continue
    }
    const rel = relative(real, at)
    if (rel && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) under.add(rel.split(sep).join('/'))
  }
  return under
}

/**
 * The regular files under `root` that `wanted` (a glob) takes and .gitignore lets through (relative, `/`-separated,
 * sorted); see eachDirectory. The glob is tested first: it is the cheaper test and usually the narrower.
 */
export async function listFiles(
  root: string,
  scope: Scope,
  signal: AbortSignal,
  wanted: (rel: string) => boolean = () => true,
): Promise<string[]> {
  const files: string[] = []
  await eachDirectory(root, scope, signal, (dir, entries, here) => {
    for (const entry of entries) {
      if (!entry.isFile() || ALWAYS_SKIPPED.has(entry.name)) continue
      const rel = dir ? `${dir}/${entry.name}` : entry.name
      if (wanted(rel) && !here.ignores(entry.name, false)) files.push(rel)
    }
    return true
  })
  // Plain sort compares UTF-16 code units.
  return files.sort()
}

interface WalkEntry {
  /** Relative to the walk root, `/`-separated. */
  path: string
  kind: 'file' | 'dir' | 'symlink' | 'other'
}

export interface WalkOptions {
  root: string
  /** Globs relative to the root (picomatch, dotfiles match): which entries to list. */
  patterns: string[]
  /** The agent's cwd (symlinks resolved): where .gitignore lookup stops outside a git repository. */
  cwd: string
  /** Whether the .gitignore files under the root must lie inside the cwd. */
  confined: boolean
  onlyFiles: boolean
  /** 1 lists the root only. */
  deep?: number
  /** Stops the walk (cancel, or the call's time limit): the walk rejects with the signal's reason. */
  signal: AbortSignal
}

export interface WalkResult {
  entries: WalkEntry[]
  /** Entries found but left out: gitignored, node_modules or .git. Directories pruned unopened are not counted. */
  hidden: number
}

const kindOf = (entry: Dirent): WalkEntry['kind'] =>
  entry.isDirectory() ? 'dir' : entry.isFile() ? 'file' : entry.isSymbolicLink() ? 'symlink' : 'other'

/**
 * Every entry under `root` that `patterns` take and .gitignore lets through, links listed as links and never
 * followed, sorted by path (`ls`, `@` completion); see eachDirectory.
 */
export async function walk(options: WalkOptions): Promise<WalkResult> {
  // Loaded on the first walk, not at start-up: a session that never lists never parses picomatch.
  const { default: picomatch } = await import('picomatch')
  const wanted = picomatch(options.patterns, { dot: true })
  const scope: Scope = { realCwd: options.cwd, confined: options.confined }
  const entries: WalkEntry[] = []
  let hidden = 0
  const visit = (dir: string, found: Dirent[], here: DirectoryRules) => {
    for (const entry of found) {
      const kind = kindOf(entry)
      const path = dir ? `${dir}/${entry.name}` : entry.name
      if ((options.onlyFiles && kind !== 'file') || !wanted(path)) continue
      // A `.git` file (worktrees, submodules) or a `node_modules` link is skipped as surely as the directories.
      if (ALWAYS_SKIPPED.has(entry.name) || here.ignores(entry.name, kind === 'dir')) hidden++
      else entries.push({ path, kind })
    }
    return true
  }
  await eachDirectory(options.root, scope, options.signal, visit, options.deep)
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  return { entries, hidden }
}

type Read = { bytes: Buffer } | 'skipped' | 'too large'

/**
 * Reads walked files one after another into one reused buffer, each opened as open.ts's `openRegular` opens one
 * (O_NOFOLLOW, O_NONBLOCK, fstat must say regular file, on Linux `/proc/self/fd/N` must lie inside the cwd) but
 * without its lstat first: the directory entry already said regular file. `keep` sees each text file's bytes in
 * the shared buffer and says whether to copy them out.
 */
export class FileReader {
  private buffer = Buffer.allocUnsafe(1024 * 1024)
  private readonly inside: string
  private readonly slicer: Slicer

  constructor(
    private readonly scope: Scope,
    private readonly max: number,
    signal: AbortSignal,
  ) {
    this.inside = scope.realCwd.endsWith(sep) ? scope.realCwd : scope.realCwd + sep
    this.slicer = new Slicer(signal)
  }

  /** The text in the file, or why not; `'left'` when `keep` said no (searched, nothing to copy). */
  async read(real: string, keep: (bytes: Buffer) => boolean): Promise<Read | 'left'> {
    await this.slicer.tick()
    let fd: number
    try {
      fd = openSync(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    } catch {
      return 'skipped'
    }
    try {
      const stats = fstatSync(fd)
      if (!stats.isFile()) return 'skipped'
      if (this.scope.confined) {
        const where = byDescriptor ? readlinkSync(`/proc/self/fd/${fd}`) : realpathSync(real)
        if (!where.startsWith(this.inside) && where !== this.scope.realCwd) return 'skipped'
      }
      if (stats.size > this.max) return 'too large'
      // A regular file reads short only at its end; one that grew past the limit since its fstat is too large.
      let want = stats.size + 1
      let total = 0
      for (;;) {
        if (this.buffer.length < want) this.buffer = Buffer.allocUnsafe(Math.max(want, this.buffer.length * 2))
        const got = readSync(fd, this.buffer, total, want - total, total)
        total += got
        if (total > this.max) return 'too large'
        if (got === 0 || total < want) break
        want = Math.min(this.max + 1, want * 2)
      }
      const bytes = this.buffer.subarray(0, total)
      if (sniff(bytes.subarray(0, SNIFF_BYTES)).kind !== 'text') return 'skipped'
      return keep(bytes) ? { bytes: Buffer.from(bytes) } : 'left'
    } catch {
      return 'skipped'
    } finally {
      closeSync(fd)
    }
  }
}

const byDescriptor = existsSync('/proc/self/fd')
