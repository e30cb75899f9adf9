import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { lstat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { cwdSlug } from '@keel/session'
import { GIT_TIMEOUT_MS, git, GitError, type GitEnv } from './git.ts'

/** One path that differs between two snapshots, as git names it: Added, Deleted, Modified, or a Type change. */
export interface Change {
  status: 'A' | 'D' | 'M' | 'T'
  path: string
  /** Either side is a repository of its own (a gitlink): git records its commit, never its files, and a restore
   * leaves its folder as it is. */
  repository?: boolean
}

/**
 * Overrides every `.gitattributes` of the work tree (`$GIT_DIR/info/attributes` comes first): a snapshot holds the
 * bytes of each file and a restore writes them back, whatever line-ending, `ident`, filter or encoding attributes
 * the project sets.
 */
const BYTE_EXACT = '* -text !eol -filter -ident !working-tree-encoding\n'

export interface Limits {
  maxFiles: number
  maxBytes: number
}

/**
 * A shadow git repository for one working directory, kept under `$KEEL_HOME/checkpoints/`: snapshots of the work tree
 * are trees in it (reachable from `refs/keel/<session>`), and restoring one is a two-tree `read-tree -u`, which
 * changes, recreates and deletes exactly the paths that differ. The project's own `.git` is never read or written;
 * `.gitignore` rules (and the project's `.git/info/exclude`) decide what is snapshotted, as they would for git.
 */
export class Shadow {
  readonly gitDir: string

  constructor(
    readonly cwd: string,
    home: string,
  ) {
    this.gitDir = join(home, 'checkpoints', `${cwdSlug(cwd)}.git`)
  }

  private env(index = 'index'): GitEnv {
    return { gitDir: this.gitDir, workTree: this.cwd, indexFile: join(this.gitDir, index) }
  }

  async init(): Promise<void> {
    if (!existsSync(join(this.gitDir, 'HEAD'))) {
      // Private: the shadow holds copies of the person's files, some of them 0600 in the work tree.
      mkdirSync(this.gitDir, { recursive: true, mode: 0o700 })
      await git({ gitDir: this.gitDir, indexFile: join(this.gitDir, 'index') }, [
        'init',
        '-q',
        '--bare',
        '--shared=0600',
        this.gitDir,
      ])
    }
    // The project's own excludes apply to its shadow too (git reads .gitignore files from the work tree itself).
    const projectExclude = join(this.cwd, '.git', 'info', 'exclude')
    const exclude = existsSync(projectExclude) ? readFileSync(projectExclude, 'utf8') : ''
    mkdirSync(join(this.gitDir, 'info'), { recursive: true })
    // Keel's own files (settings, rules "always" saved) are not the agent's work: no snapshot takes them, so no rewind
    // deletes or reverts them.
    writeFileSync(join(this.gitDir, 'info', 'exclude'), `${exclude}\n.git\n.keel/\n`)
    const attributes = join(this.gitDir, 'info', 'attributes')
    if (!existsSync(attributes) || readFileSync(attributes, 'utf8') !== BYTE_EXACT) {
      // A shadow from before this rule may hold converted copies that its stat cache calls up to date: its indexes
      // go, so the next snapshot reads every file again.
      for (const name of readdirSync(this.gitDir))
        if (/^index(\.|$)/.test(name) && !name.endsWith('.lock')) rmSync(join(this.gitDir, name), { force: true })
      writeFileSync(attributes, BYTE_EXACT)
    }
  }

  /** Files and bytes a snapshot would hold, stopping early once past a limit. */
  async measure(limits: Limits): Promise<{ files: number; bytes: number; over?: string }> {
    const listing = await git(this.env('index.measure'), [
      'ls-files',
      '-z',
      '--cached',
      '--others',
      '--exclude-standard',
    ])
    const paths = listing.split('\0').filter(Boolean)
    if (paths.length > limits.maxFiles)
      return { files: paths.length, bytes: 0, over: `${paths.length} files (the limit is ${limits.maxFiles})` }
    let bytes = 0
    for (let i = 0; i < paths.length; i += 256) {
      const sizes = await Promise.all(
        paths.slice(i, i + 256).map((path) =>
          lstat(join(this.cwd, path)).then(
            (s) => s.size,
            () => 0,
          ),
        ),
      )
      for (const size of sizes) bytes += size
      if (bytes > limits.maxBytes)
        return { files: paths.length, bytes, over: `more than ${Math.round(limits.maxBytes / 1e6)} MB (the limit)` }
    }
    return { files: paths.length, bytes }
  }

  /** The work tree as a tree object now (the index is a stat cache, so an unchanged tree costs little). */
  async tree(index = 'index'): Promise<string> {
    await retryOnLock(join(this.gitDir, `${index}.lock`), () =>
      git(this.env(index), ['add', '-A', '--ignore-errors', '--', '.']),
    )
    return (await git(this.env(index), ['write-tree'])).trim()
  }

  /** Keeps a tree reachable (so git never prunes it) on the session's own ref; returns the commit. */
  async keep(tree: string, session: string, message: string): Promise<string> {
    const ref = `refs/keel/${session}`
    const parent = await git(this.env(), ['rev-parse', '--verify', '-q', ref]).then(
      (out) => out.trim(),
      () => '',
    )
    const commit = (
      await git(this.env(), ['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', message])
    ).trim()
    await git(this.env(), ['update-ref', ref, commit])
    return commit
  }

  async hasTree(tree: string): Promise<boolean> {
    return git(this.env(), ['cat-file', '-e', `${tree}^{tree}`]).then(
      () => true,
      () => false,
    )
  }

  async diff(from: string, to: string): Promise<Change[]> {
    if (from === to) return []
    // --raw: `:<mode> <mode> <sha> <sha> <status>` then the path, so a gitlink (mode 160000) is known.
    const out = await git(this.env(), ['diff-tree', '-r', '-z', '--no-renames', '--raw', from, to])
    const parts = out.split('\0').filter(Boolean)
    const changes: Change[] = []
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const [before, after, , , status] = parts[i]!.slice(1).split(' ')
      const change: Change = { status: status![0] as Change['status'], path: parts[i + 1]! }
      if (before === '160000' || after === '160000') change.repository = true
      changes.push(change)
    }
    return changes
  }

  /**
   * Which of `paths` git ignores, by the work tree's ignore files as they are now or by those of `tree` (a rewind's
   * target): such a file is the person's (a `.env`, a build), even when a changed `.gitignore` let a snapshot take it.
   */
  async ignored(paths: readonly string[], tree: string): Promise<Set<string>> {
    const found = new Set<string>()
    if (!paths.length) return found
    const check = async (workTree: string) => {
      const out = await git(
        { gitDir: this.gitDir, workTree, indexFile: join(this.gitDir, 'index.ignored') },
        ['check-ignore', '--no-index', '-z', '--stdin'],
        { input: `${paths.join('\0')}\0`, okCodes: [1] },
      )
      for (const path of out.split('\0')) if (path) found.add(path)
    }
    await check(this.cwd)
    // The target's ignore files, laid out alone in a scratch folder that stands in for its work tree.
    const listing = await git(this.env(), ['ls-tree', '-r', '-z', '--full-tree', tree])
    const ignoreFiles = listing
      .split('\0')
      .filter(Boolean)
      .map((line) => ({ object: line.split(/\s/)[2]!, path: line.slice(line.indexOf('\t') + 1) }))
      .filter((entry) => entry.path === '.gitignore' || entry.path.endsWith('/.gitignore'))
    if (!ignoreFiles.length) return found
    const scratch = mkdtempSync(join(tmpdir(), 'keel-ignore-'))
    try {
      for (const file of ignoreFiles) {
        mkdirSync(join(scratch, dirname(file.path)), { recursive: true })
        writeFileSync(join(scratch, file.path), await git(this.env(), ['cat-file', 'blob', file.object]))
      }
      await check(scratch)
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
    return found
  }

  /**
   * Makes the work tree equal `target` where it differs from `current` (a tree taken just now into `index`, so
   * git knows the files are up to date): changed files rewritten, missing ones recreated, extra ones deleted.
   */
  async restore(current: string, target: string, index: string): Promise<void> {
    await git(this.env(index), ['read-tree', '-m', '-u', current, target])
  }
}

async function retryOnLock<T>(lock: string, run: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run()
    } catch (error) {
      // Another Keel process snapshotting the same directory holds the shadow's index lock for a moment.
      if (!(error instanceof GitError) || !/index\.lock/.test(error.message)) throw error
      if (attempt < 20) {
        await new Promise((done) => setTimeout(done, 50))
        continue
      }
      // A git killed mid-snapshot (kill -9, a crash) leaves its lock behind, which would disable checkpoints for
      // this folder for good: a lock no process holds open is removed, once.
      if (attempt === 20 && staleLock(lock)) {
        rmSync(lock, { force: true })
        continue
      }
      throw error
    }
  }
}

/** Whether no process holds `lock` open: /proc on Linux; elsewhere, older than any git run may last. */
function staleLock(lock: string): boolean {
  let stats: ReturnType<typeof statSync>
  try {
    stats = statSync(lock)
  } catch {
    return true
  }
  if (process.platform !== 'linux') return Date.now() - stats.mtimeMs > GIT_TIMEOUT_MS
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === lock) return false
      } catch {}
    }
  }
  return true
}
