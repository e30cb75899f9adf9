import { lstat, stat } from 'node:fs/promises'
import { dirname, join, sep } from 'node:path'
import type { Readable } from 'node:stream'
import { GitignoreRules } from './gitignore.ts'
import { yieldToLoop } from './limit.ts'
import { openRegular, readAll } from './open.ts'
import { isInside, type Scope } from './paths.ts'

/** Never worth walking into, ignored or not. */
const ALWAYS_SKIPPED = ['node_modules', '.git']
/** A path with an ALWAYS_SKIPPED part: one test per entry, where splitting every path cost a walk ~10% more. */
const SKIPPED_PART = /(?:^|\/)(?:node_modules|\.git)(?:\/|$)/

interface WalkEntry {
  /** Relative to the walk root, `/`-separated. */
  path: string
  kind: 'file' | 'dir' | 'symlink' | 'other'
}

export interface WalkOptions {
  root: string
  /** fast-glob patterns relative to the root. */
  patterns: string[]
  /** The agent's cwd (symlinks resolved): where .gitignore lookup stops outside a git repository. */
  cwd: string
  /** Whether the .gitignore files under the root must lie inside the cwd. */
  confined: boolean
  onlyFiles: boolean
  /** 1 lists the root only. */
  deep?: number
  /** A pattern without a slash matches at any depth. */
  baseNameMatch?: boolean
  /** Stops the walk (cancel, or the call's time limit): the walk rejects with the signal's reason. */
  signal: AbortSignal
}

export interface WalkResult {
  entries: WalkEntry[]
  /** Entries found but left out: gitignored, node_modules or .git. Directories pruned unopened are not counted. */
  hidden: number
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  )
/** Larger .gitignore files are not read. */
export const MAX_GITIGNORE_BYTES = 1024 * 1024

/**
 * A .gitignore comes from the repository, so it gets the same care as any file a tool reads: a regular file only (a
 * FIFO would block, /dev/zero would never end), not through a symlink (git does not follow one either), inside the
 * cwd when the walk is (the ones above the cwd, up to the repository top, are read on purpose), and at most 1 MB.
 */
export function readText(path: string, scope: Scope): Promise<string | undefined> {
  return openRegular(path, path, scope, 'read')
    .then(async ({ handle }) => {
      try {
        return (await readAll(handle, MAX_GITIGNORE_BYTES, () => new Error('too large'))).toString('utf8')
      } finally {
        await handle.close()
      }
    })
    .catch(() => undefined)
}

/** The directories above `root` whose .gitignore applies: up to the repository top, or to the cwd outside a repo. */
export async function ancestorDirs(root: string, cwd: string): Promise<string[]> {
  const dirs: string[] = []
  if (await exists(join(root, '.git'))) return dirs
  for (let dir = dirname(root); ; dir = dirname(dir)) {
    dirs.push(dir)
    if (await exists(join(dir, '.git'))) return dirs
    if (dirname(dir) === dir) break
  }
  // No repository above: only the cwd's own tree counts.
  return isInside(cwd, root) ? dirs.filter((dir) => isInside(cwd, dir)) : []
}

export async function loadRules(root: string, cwd: string, scope: Scope): Promise<GitignoreRules> {
  const rules = new GitignoreRules(root)
  for (const dir of await ancestorDirs(root, cwd)) {
    const text = await readText(join(dir, '.gitignore'), { realCwd: cwd, confined: false })
    if (text !== undefined) rules.add(dir, text)
  }
  if (rules.rootIgnored()) rules.dropAncestors()
  const own = await readText(join(root, '.gitignore'), scope)
  if (own !== undefined) rules.add(root, own)
  return rules
}

/** Rejects with the abort reason; fast-glob has no signal of its own, so its stream is destroyed instead. */
async function collect<T>(stream: Readable, signal: AbortSignal): Promise<T[]> {
  const out: T[] = []
  const stop = () => stream.destroy()
  signal.addEventListener('abort', stop, { once: true })
  try {
    for await (const item of stream) {
      if (signal.aborted) break
      out.push(item as T)
    }
  } finally {
    signal.removeEventListener('abort', stop)
  }
  if (signal.aborted) throw signal.reason
  return out
}

/**
 * Whether every folder on `rel`'s path below the root is a real directory. fast-glob does not descend into
 * symlinked folders, but a pattern's literal part (`rootlink/etc/*`, `rootlink/etc/passwd`) is opened as a path and
 * the OS follows links in it; such entries are dropped, so a walk never lists or reads through a link.
 */
class RealDirs {
  private readonly known = new Map<string, Promise<boolean>>()
  constructor(private readonly root: string) {}

  under(rel: string): Promise<boolean> {
    const slash = rel.lastIndexOf('/')
    return slash < 0 ? Promise.resolve(true) : this.dir(rel.slice(0, slash))
  }

  private dir(rel: string): Promise<boolean> {
    let verdict = this.known.get(rel)
    if (!verdict) {
      verdict = this.under(rel).then(
        (parentOk) =>
          parentOk &&
          lstat(join(this.root, rel.split('/').join(sep))).then(
            (info) => info.isDirectory(),
            () => false,
          ),
      )
      this.known.set(rel, verdict)
    }
    return verdict
  }
}

/**
 * Keel's own walk: fast-glob does the walking, `ignore` decides what .gitignore hides (grep and glob let ripgrep do
 * both where it can, rg-ignore.ts). Symlinks are not followed, so a link inside the cwd cannot pull a walk outside
 * it (see RealDirs for the literal parts of a pattern).
 */
export async function walk(options: WalkOptions): Promise<WalkResult> {
  const { signal } = options
  const scope: Scope = { realCwd: options.cwd, confined: options.confined }
  const rules = await loadRules(options.root, options.cwd, scope)
  // Loaded on the first walk, not at start-up: a session that never greps or globs never parses fast-glob.
  const { default: fg } = await import('fast-glob')
  const skipped = ALWAYS_SKIPPED.map((name) => `**/${name}/**`)
  const base = {
    cwd: options.root,
    dot: true,
    followSymbolicLinks: false,
    suppressErrors: true,
    // Listing one level descends nowhere, and leaving the ignore list empty lets hidden entries be counted.
    ignore: options.deep === 1 ? [] : [...skipped, ...rules.pruneGlobs()],
  }
  type Found = { path: string; dirent: import('node:fs').Dirent }
  const nested =
    options.deep === 1
      ? Promise.resolve([] as string[])
      : collect<string>(
          fg.stream(['**/.gitignore'], { ...base, onlyFiles: true, deep: options.deep ?? Infinity }) as Readable,
          signal,
        )
  const [found, gitignores] = await Promise.all([
    collect<Found>(
      fg.stream(options.patterns, {
        ...base,
        objectMode: true,
        onlyFiles: options.onlyFiles,
        deep: options.deep ?? Infinity,
        baseNameMatch: options.baseNameMatch ?? false,
      }) as Readable,
      signal,
    ),
    nested,
  ])
  const entries = found.map((entry) => ({
    path: entry.path,
    kind: entry.dirent.isDirectory()
      ? ('dir' as const)
      : entry.dirent.isFile()
        ? ('file' as const)
        : entry.dirent.isSymbolicLink()
          ? ('symlink' as const)
          : ('other' as const),
  }))
  return judge(options, rules, scope, entries, gitignores, new RealDirs(options.root))
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** What the walk found, less what .gitignore, node_modules, .git or a link on the way hides; sorted by path. */
async function judge(
  options: WalkOptions,
  rules: GitignoreRules,
  scope: Scope,
  found: WalkEntry[],
  gitignores: string[],
  real: RealDirs,
): Promise<WalkResult> {
  const { signal } = options
  await Promise.all(
    gitignores
      .filter((path) => path !== '.gitignore')
      .map(async (path) => {
        const text = await readText(join(options.root, path), scope)
        if (text !== undefined) rules.add(join(options.root, dirname(path).split('/').join(sep)), text)
      }),
  )
  const entries: WalkEntry[] = []
  let hidden = 0
  for (let i = 0; i < found.length; i++) {
    // Deciding .gitignore for a huge tree is synchronous work: give the loop (and a cancel) a turn now and then.
    if (i % 2000 === 1999) {
      await yieldToLoop()
      if (signal.aborted) throw signal.reason
    }
    const entry = found[i]!
    if (!(await real.under(entry.path))) continue
    const { kind } = entry
    // A `.git` file (worktrees, submodules) or a `node_modules` symlink is skipped as surely as the directories.
    if (SKIPPED_PART.test(entry.path) || rules.ignores(entry.path, kind === 'dir')) hidden++
    else entries.push(entry)
  }
  entries.sort((a, b) => byCodeUnits(a.path, b.path))
  return { entries, hidden }
}
