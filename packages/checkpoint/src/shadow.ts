import { execFile } from 'node:child_process'
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { lstat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path'
import { mountPointsNow } from '@keel/sandbox/mount-points'
import { cwdSlug, sessionsRoot } from '@keel/session/paths'
import { GIT_TIMEOUT_MS, git, GitError, type GitEnv } from './git.ts'
import { type IndexFigures, type IndexSizes, indexSizes } from './index-file.ts'

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
  /** How long git may take to list the folder before it counts as too large (default {@link LIST_SECONDS}). */
  listSeconds?: number
}

/** What a snapshot holds, and which limit it passes (`over`, in words). */
export interface Size {
  files: number
  bytes: number
  over?: string
}

/** The last measure's figures, kept in the shadow: a new process judges the limits by them (`recall`). */
const MEASURE_FILE = 'keel-measure.json'
/** An index file larger than this is not read into memory (git lists it instead): a project's could be any size. */
const INDEX_READ_BYTES = 64 * 1024 * 1024

/**
 * The index file at `path` (throws as `readFileSync` does), or undefined when it is larger than the bound or no
 * regular file: opened without blocking, so a FIFO where a project's `.git/index` belongs cannot hang the process.
 */
function readIndexFile(path: string): Buffer | undefined {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const stat = fstatSync(fd)
    return stat.isFile() && stat.size <= INDEX_READ_BYTES ? readFileSync(fd) : undefined
  } finally {
    closeSync(fd)
  }
}

/** The signatures of the index extensions a seed drops: untracked cache, fsmonitor data, a split index's link. */
const INDEX_EXTENSIONS = /UNTR|FSMN|link/

function overOf(limits: Limits, files: number, bytes: number): { over?: string } {
  if (files > limits.maxFiles) return { over: `${files} files (the limit is ${limits.maxFiles})` }
  if (bytes > limits.maxBytes) return { over: `more than ${Math.round(limits.maxBytes / 1e6)} MB (the limit)` }
  return {}
}

/** How long the listing of a folder's files may take before the folder counts as too large for checkpoints. */
const LIST_SECONDS = 10

/** Whether two sets of limits judge a folder alike (a check begun early is taken over only then). */
export function sameLimits(a: Limits, b: Limits): boolean {
  const seconds = (limits: Limits) => limits.listSeconds ?? LIST_SECONDS
  return a.maxFiles === b.maxFiles && a.maxBytes === b.maxBytes && seconds(a) === seconds(b)
}

/** One `ls-files --debug` block, the stat data git prints after each path the index holds. */
const DEBUG_BLOCK = /^ {2}ctime:[^\n]*\n {2}mtime:[^\n]*\n {2}dev:[^\n]*\n {2}uid:[^\n]*\n {2}size: (\d+)\t[^\n]*\n/

/**
 * `ls-files -z --debug --cached --others`: each path, then (for a path the index holds) its stat block before the
 * next path. The sizes of indexed files, and the paths that are not indexed (to be lstat'ed).
 */
function parseDebugListing(listing: string): { files: number; bytes: number; others: string[] } {
  const parts = listing.split('\0')
  const others: string[] = []
  let files = 0
  let bytes = 0
  let path = parts[0] ?? ''
  for (let i = 1; i <= parts.length; i++) {
    let next = parts[i] ?? ''
    const block = DEBUG_BLOCK.exec(next)
    if (block) {
      bytes += Number(block[1])
      next = next.slice(block[0].length)
    } else if (path) {
      others.push(path)
    }
    if (path) files++
    path = next
  }
  return { files, bytes, others }
}

/**
 * `ls-files -s -v -z` of a seed: the blobs its entries name (a blob at several paths more than once: pack-objects
 * takes it once), and whether a `.gitattributes` is among them. Throws unless every entry is one git looks at
 * (tag H, stage 0). Read by offsets, not split into pieces: the seed waits on this for every entry of a large index.
 */
function seedEntries(listing: string): { blobs: string[]; attributes: boolean } {
  const blobs: string[] = []
  let attributes = false
  for (let at = 0; at < listing.length; ) {
    const end = listing.indexOf('\0', at)
    const stop = end === -1 ? listing.length : end
    // "<tag> <mode> <object> <stage>\t<path>"
    const mode = listing.indexOf(' ', at) + 1
    const object = listing.indexOf(' ', mode) + 1
    const stage = listing.indexOf(' ', object) + 1
    const tab = listing.indexOf('\t', stage)
    if (mode !== at + 2 || listing[at] !== 'H' || tab !== stage + 1 || listing[stage] !== '0')
      throw new GitError('the project index is not a plain one')
    if (listing.slice(mode, object - 1) !== '160000') blobs.push(listing.slice(object, stage - 1))
    const name = stop - '.gitattributes'.length
    if (listing.startsWith('.gitattributes', name) && (name === tab + 1 || listing[name - 1] === '/')) attributes = true
    at = stop + 1
  }
  return { blobs, attributes }
}

/** `path` as a path inside `cwd` (git's spelling), or undefined when it is `cwd` itself or lies outside it. */
function inside(cwd: string, path: string): string | undefined {
  // A home not made yet is resolved through its nearest folder that exists (a symlinked /tmp, say).
  const real = (at: string): string => {
    try {
      return realpathSync(at)
    } catch {
      const parent = dirname(at)
      return parent === at ? at : join(real(parent), basename(at))
    }
  }
  const rel = relative(real(cwd), real(path))
  if (!rel || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined
  return rel.split(sep).join('/')
}

/** A `gitignore` pattern that matches exactly `path` (a folder) from the top of the work tree. */
function anchored(path: string): string {
  return `/${path.replace(/[\\*?[\]!#]/g, '\\$&').replace(/ $/, '\\ ')}/`
}

/**
 * An exclude pathspec for the folder `path`. Its first character is escaped: git 2.39's `add` reports (and fails on)
 * an ignored folder that an exclude item names from its first character, so the item must start with a wildcard.
 */
function excluded(path: string): string {
  return `${excludedPath(path)}/**`
}

/** An exclude pathspec for exactly the file `path` (its first character escaped, as {@link excluded} says). */
function excludedPath(path: string): string {
  return `:(exclude,glob)\\${path[0]}${path.slice(1).replace(/[*?[\]\\]/g, '\\$&')}`
}

/** Whether the person's git would convert the project's files on `git add` (autocrlf, an attributes file). */
async function projectConverts(cwd: string): Promise<boolean> {
  // The person's own config (system, global, the project's): read-only, so no hook or filter of it runs.
  const out = await new Promise<string>((done) =>
    execFile(
      'git',
      ['config', '--get-regexp', '^core\\.(autocrlf|attributesfile)$'],
      { cwd, timeout: 10_000, env: { ...process.env, GIT_DIR: join(cwd, '.git') } },
      (_error, stdout) => done(String(stdout ?? '')),
    ),
  )
  return out.split('\n').some((line) => line && !/^core\.autocrlf false$/i.test(line.trim()))
}

/**
 * A shadow git repository for one working directory, kept under `$KEEL_HOME/checkpoints/`: snapshots of the work tree
 * are trees in it (reachable from `refs/keel/<session>`), and restoring one is a two-tree `read-tree -u`, which
 * changes, recreates and deletes exactly the paths that differ. The project's own `.git` is never read or written;
 * `.gitignore` rules (and the project's `.git/info/exclude`) decide what is snapshotted, as they would for git.
 */
export class Shadow {
  readonly gitDir: string
  /**
   * Keel's home, its sessions and its shadows where they lie inside the work tree (`keel` run in `~` with
   * `KEEL_HOME=~/keel`): never snapshotted, whatever the `.gitignore` files say, so a rewind never touches them.
   */
  private readonly own: string[]

  constructor(
    readonly cwd: string,
    home: string,
  ) {
    const checkpoints = join(home, 'checkpoints')
    this.gitDir = join(checkpoints, `${cwdSlug(cwd)}.git`)
    const own = [home, sessionsRoot(home), checkpoints].map((path) => inside(cwd, path))
    this.own = own.filter((path, i): path is string => path !== undefined && own.indexOf(path) === i)
  }

  /** The pathspec of every operation on the work tree: all of it but Keel's own folders (`own`). */
  private pathspec(): string[] {
    return ['--', '.', ...this.own.map(excluded)]
  }

  /** Drops Keel's own folders from `index`: the project's index, or a shadow's from before this rule, may hold them. */
  private async dropOwn(index: string): Promise<void> {
    if (!this.own.length) return
    const literal = this.own.map((path) => `:(literal)${path}`)
    await git(this.env(index), ['rm', '--cached', '-r', '-q', '-f', '--ignore-unmatch', '--', ...literal])
  }

  private env(index = 'index'): GitEnv {
    return { gitDir: this.gitDir, workTree: this.cwd, indexFile: join(this.gitDir, index) }
  }

  async init(): Promise<void> {
    if (!existsSync(join(this.gitDir, 'HEAD')) && !createRepository(this.gitDir)) {
      // A folder there already that is no repository (an init cut short): git makes one in it.
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
    // Keel's home inside the work tree is out of `ls-files --others` too (a `.gitignore` cannot take it back in: every
    // operation's pathspec excludes it).
    const own = this.own.map((path) => `${anchored(path)}\n`).join('')
    writeFileSync(join(this.gitDir, 'info', 'exclude'), `${exclude}\n.git\n.keel/\n${own}`)
    const attributes = join(this.gitDir, 'info', 'attributes')
    if (!existsSync(attributes) || readFileSync(attributes, 'utf8') !== BYTE_EXACT) {
      // A shadow from before this rule may hold converted copies that its stat cache calls up to date: its indexes
      // go, so the next snapshot reads every file again.
      for (const name of readdirSync(this.gitDir))
        if (/^index(\.|$)/.test(name) && !name.endsWith('.lock')) rmSync(join(this.gitDir, name), { force: true })
      writeFileSync(attributes, BYTE_EXACT)
    }
    if (this.own.length && this.warm()) await retryOnLock(join(this.gitDir, 'index.lock'), () => this.dropOwn('index'))
  }

  /**
   * Files and bytes a snapshot would hold, stopping early once past a limit. The sizes of the files the shadow's index
   * holds come from its stat cache (`ls-files --debug`); only the others are lstat'ed, so a warm or seeded shadow is
   * measured by one git process. The figures are kept in the shadow (`recall`) for the next process.
   */
  async measure(
    limits: Limits,
    index = 'index',
    /** The index file as a caller already read it (`null`: it reads whole only through git). */
    read: IndexSizes | null = this.indexed(index) ?? null,
  ): Promise<Size> {
    // git walks the whole folder before it prints a line of `--others`: in a folder with no .gitignore over millions
    // of files (a home, /tmp) that took two minutes, all of it waited for by the first writing tool, only for the
    // answer to be "too many". A folder git cannot list in `listSeconds` is over any limit a snapshot could keep.
    const seconds = limits.listSeconds ?? LIST_SECONDS
    const listed = AbortSignal.timeout(seconds * 1000)
    // The index's own figures when it reads whole (none yet: every file is another); else git's listing of them.
    const cached = read ?? undefined
    const listing = await git(
      this.env(index),
      [
        'ls-files',
        '-z',
        ...(cached ? [] : ['--debug', '--cached']),
        '--others',
        '--exclude-standard',
        ...this.pathspec(),
      ],
      { signal: listed },
    ).catch((error: unknown) => {
      if (listed.aborted) return undefined
      throw error
    })
    if (listing === undefined) return { files: 0, bytes: 0, over: `more files than git lists in ${seconds} s` }
    const {
      files,
      bytes: indexed,
      others,
    } = cached ? { ...cached, others: listing.split('\0').filter(Boolean) } : parseDebugListing(listing)
    const size = await this.sized(limits, cached ? files + others.length : files, indexed, others)
    try {
      writeFileSync(join(this.gitDir, MEASURE_FILE), JSON.stringify({ files: size.files, bytes: size.bytes }))
    } catch {}
    return size
  }

  /** The figures of the files `index` holds, read from the file (none: nothing), or undefined to ask git. */
  private indexed(index: string): IndexFigures | IndexSizes | undefined {
    let buffer: Buffer | undefined
    try {
      buffer = readIndexFile(join(this.gitDir, index))
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? { files: 0, bytes: 0 } : undefined
    }
    return buffer && indexSizes(buffer, this.own)
  }

  /** The last measure's figures, judged against `limits`; undefined for a shadow never measured. */
  recall(limits: Limits): Size | undefined {
    try {
      const { files, bytes } = JSON.parse(readFileSync(join(this.gitDir, MEASURE_FILE), 'utf8')) as Size
      if (typeof files !== 'number' || typeof bytes !== 'number') return undefined
      return { files, bytes, ...overOf(limits, files, bytes) }
    } catch {
      return undefined
    }
  }

  private async sized(limits: Limits, files: number, indexed: number, others: string[]): Promise<Size> {
    if (files > limits.maxFiles) return { files, bytes: 0, ...overOf(limits, files, 0) }
    let bytes = indexed
    for (let i = 0; i < others.length; i += 256) {
      if (bytes > limits.maxBytes) break
      const sizes = await Promise.all(
        others.slice(i, i + 256).map((path) =>
          lstat(join(this.cwd, path)).then(
            (s) => s.size,
            () => 0,
          ),
        ),
      )
      for (const size of sizes) bytes += size
    }
    return { files, bytes, ...overOf(limits, files, bytes) }
  }

  /**
   * A cold shadow (no index yet) starts from the project's own `.git/index`, so its first snapshot reads only what
   * changed since the person's last `git add` instead of every file. The blobs that index names are copied into a
   * pack of the shadow's own, read through a borrowed object directory for that one git process (the project's
   * config is never read, and nothing points at the project's objects afterwards: a `git gc` there cannot take a
   * snapshot's files). Entries git would not look at (skip-worktree, assume-unchanged, conflicts) make no seed, and
   * entries git ignores (a force-added file, `.keel/`) are dropped, so the seeded index holds what an unseeded first
   * snapshot would. When the project converts files on their way in (`.gitattributes`, `core.autocrlf`), its blobs
   * are not the bytes on disk: every entry is then made racily clean, so git compares contents, not stat data.
   * The blobs (and the trees of the project's HEAD) are copied after the first `add` (`writeTree` waits for it),
   * unless the project converts. Returns the figures (`measure`) when it seeded; any failure leaves the shadow cold.
   */
  async seed(limits: Limits): Promise<Size | undefined> {
    const index = join(this.gitDir, 'index')
    const projectGit = join(this.cwd, '.git')
    const projectIndex = join(projectGit, 'index')
    if (existsSync(index) || !existsSync(projectIndex) || !statSync(projectGit).isDirectory()) return undefined
    const name = `index.seed-${process.pid}`
    const seed = join(this.gitDir, name)
    try {
      // The project's file is not Keel's: one over the bound (an index of hundreds of thousands of entries, over any
      // limit a snapshot keeps) or no regular file seeds nothing.
      const bytes = readIndexFile(projectIndex)
      if (!bytes) return undefined
      writeFileSync(seed, bytes, { mode: 0o600 })
      chmodSync(seed, 0o600)
      // The entries come from the file itself when it reads whole (versions 2 and 3), else from git (a split index's
      // other half is not here: reading it fails, and the shadow stays cold). The measure runs beside the listing of
      // ignored entries, on the copy as it came, so a process's start (which holds the main thread) hides it; it
      // stands unless entries git ignores are dropped below (Keel's own folders it leaves out itself).
      const read = indexSizes(bytes, this.own)
      const whole = read?.attributes === undefined ? undefined : read
      const [listing, ignored, early, projectConvertsToo] = await Promise.all([
        whole ? undefined : git(this.env(name), ['ls-files', '-s', '-v', '-z']),
        git(this.env(name), ['ls-files', '-z', '--cached', '--ignored', '--exclude-standard']),
        this.measure(limits, name, read ?? null),
        projectConverts(this.cwd),
      ])
      if (whole && !whole.plain) throw new GitError('the project index is not a plain one')
      const listed = listing === undefined ? undefined : seedEntries(listing)
      const blobs = whole ? whole.blobs : () => listed!.blobs
      const converts = (whole?.attributes ?? listed!.attributes) || existsSync(join(projectGit, 'info', 'attributes'))
      // Untracked-cache and fsmonitor data describe the project's setup, not the shadow's: dropped in the same
      // process that drops the entries git ignores. Neither there (no extension's signature anywhere in the file: a
      // path that holds one only costs this process), nothing to do.
      const extensions = whole ? whole.extensions.join(' ') : bytes.toString('latin1')
      if (ignored || INDEX_EXTENSIONS.test(extensions))
        await git(
          this.env(name),
          [
            'update-index',
            '--no-untracked-cache',
            '--no-fsmonitor',
            '--no-split-index',
            '--force-remove',
            '-z',
            '--stdin',
          ],
          { input: ignored },
        )
      await this.dropOwn(name)
      const size = ignored ? await this.measure(limits, name) : early
      const convertsToo = converts || projectConvertsToo
      // The objects the index names (and the trees of the project's HEAD, which its cache of trees mostly names, so
      // `write-tree` writes no tree of its own) are copied after the first `add`, not before it: that `add` needs
      // only the stat data, and the tool waiting for it runs while they are copied. `writeTree` waits for the copy.
      // When the project converts, that `add` reads every file: the objects are copied first, so the blobs it hashes
      // are found in the pack instead of written one file each.
      const head = projectHead(projectGit)
      const copy = () =>
        git(this.env(), ['pack-objects', '--revs', '-q', join(this.gitDir, 'objects', 'pack', 'pack')], {
          input: `${head ? `${head}^{tree}\n` : ''}${blobs().join('\n')}\n`,
          env: { GIT_ALTERNATE_OBJECT_DIRECTORIES: join(projectGit, 'objects') },
        })
      if (convertsToo) {
        await copy()
        utimesSync(seed, 1, 1)
      }
      if (existsSync(index)) throw new GitError('another process made the index first')
      renameSync(seed, index)
      if (!convertsToo) copies.set(this.gitDir, { run: copy })
      return size
    } catch {
      rmSync(seed, { force: true })
      return undefined
    }
  }

  /**
   * Waits for the seeded objects' copy. A copy that fails (the project lost objects its index names), or a seeded
   * index whose copy never ran (a process killed in between, found by `write-tree` missing a blob), leaves an index
   * that vouches for objects the shadow lacks: it is dropped, so the next snapshot reads every file.
   */
  private async seeded(): Promise<void> {
    const copy = copies.get(this.gitDir)
    if (!copy) return
    copy.done ??= copy.run()
    try {
      await copy.done
    } catch (error) {
      this.unseed()
      throw error
    } finally {
      copies.delete(this.gitDir)
    }
  }

  private unseed(): void {
    rmSync(join(this.gitDir, 'index'), { force: true })
    this.trees.delete('index')
  }

  /** How many entries the project's own `.git/index` holds (what a `seed` would start from); 0 for none. */
  projectEntries(): number {
    return indexEntries(join(this.cwd, '.git', 'index'))
  }

  /** Whether the shadow has an index (its stat cache): its next snapshot costs a stat pass, not a read of every file. */
  warm(): boolean {
    return existsSync(join(this.gitDir, 'index'))
  }

  /**
   * Stages the work tree into `index` (a stat cache: only files whose stat data changed are read). A running sandbox's
   * mount points for missing protected files (an empty `.bashrc`, `.mcp.json`…) are not the person's: left out, so a
   * rewind never brings them back as files.
   */
  async add(index = 'index'): Promise<void> {
    const lock = join(this.gitDir, `${index}.lock`)
    const inTree = (points: Iterable<string>) => [...points].flatMap((path) => inside(this.cwd, path) ?? [])
    // Read now, not once a wrap under way is done: what it makes is in the set before it is on disk, and taken out below.
    const before = mountPointsNow()
    await retryOnLock(lock, () =>
      git(this.env(index), ['add', '-A', '--ignore-errors', ...this.pathspec(), ...inTree(before).map(excludedPath)]),
    )
    // A sandbox wrapped during the walk made mount points it may have read: they come out of the index again.
    const late = inTree([...mountPointsNow()].filter((path) => !before.has(path)))
    if (late.length)
      await retryOnLock(lock, () => git(this.env(index), ['update-index', '--force-remove', '--', ...late]))
  }

  /** Per index, the tree of its content as it was when `write-tree` last ran, by the index's checksum. */
  private readonly trees = new Map<string, { sum: string; tree: string }>()

  /**
   * The tree `index` holds: what the work tree was when `add` last ran on it. An index whose checksum (its last 20
   * bytes, over all its content) is the one `write-tree` last saw holds the same entries, so the same tree, without a
   * git process: an `add` that found nothing changed leaves the file as it was.
   */
  async writeTree(index = 'index'): Promise<string> {
    const file = join(this.gitDir, index)
    const before = checksum(file)
    const known = this.trees.get(index)
    if (before && known?.sum === before) return known.tree
    if (index === 'index') await this.seeded()
    const tree = (
      await git(this.env(index), ['write-tree']).catch((error: unknown) => {
        if (index === 'index' && error instanceof GitError && /invalid object/.test(error.message)) this.unseed()
        throw error
      })
    ).trim()
    // Kept only when the index did not change while git read it (write-tree itself may add its cache, or another
    // process snapshotting this folder may have written it): the next call then runs git again.
    if (before && checksum(file) === before) this.trees.set(index, { sum: before, tree })
    else this.trees.delete(index)
    return tree
  }

  /** The work tree as a tree object now (the index is a stat cache, so an unchanged tree costs little). */
  async tree(index = 'index'): Promise<string> {
    await this.add(index)
    return this.writeTree(index)
  }

  /** Keeps a tree reachable (so git never prunes it) on the session's own ref; returns the commit. */
  async keep(tree: string, session: string, message: string): Promise<string> {
    const ref = `refs/keel/${session}`
    const parent = await this.head(ref)
    const commit = (
      await git(this.env(), ['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', message])
    ).trim()
    await git(this.env(), ['update-ref', ref, commit])
    return commit
  }

  /** The commit `ref` points at, '' for none: a loose ref is read as a file, a packed one (a `git pack-refs` run in the shadow) through git. */
  private async head(ref: string): Promise<string> {
    try {
      const loose = readFileSync(join(this.gitDir, ref), 'utf8').trim()
      if (/^[0-9a-f]{40,64}$/.test(loose)) return loose
    } catch {}
    if (!existsSync(join(this.gitDir, 'packed-refs'))) return ''
    return git(this.env(), ['rev-parse', '--verify', '-q', ref]).then(
      (out) => out.trim(),
      () => '',
    )
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
    const out = await git(this.env(), ['diff-tree', '-r', '-z', '--no-renames', '--raw', from, to, ...this.pathspec()])
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
    await git(this.env(index), ['read-tree', '-m', '-u', current, await this.withoutOwn(target)])
  }

  /** `tree` without Keel's own folders: a snapshot from before they were excluded may hold them. */
  private async withoutOwn(tree: string): Promise<string> {
    if (!this.own.length) return tree
    const name = `index.own-${process.pid}`
    try {
      await git(this.env(name), ['read-tree', tree])
      await this.dropOwn(name)
      return await this.writeTree(name)
    } finally {
      rmSync(join(this.gitDir, name), { force: true })
    }
  }
}

/**
 * Per shadow (its git directory), the copy of a seeded index's objects, begun by the first `writeTree` of any
 * `Shadow` of that folder in this process (`seed`).
 */
const copies = new Map<string, { run: () => Promise<unknown>; done?: Promise<unknown> }>()

/** The commit the project's HEAD names (a loose or packed ref, or a detached HEAD), read as files; undefined for none. */
function projectHead(projectGit: string): string | undefined {
  const oid = /^[0-9a-f]{40}$/
  try {
    const head = readFileSync(join(projectGit, 'HEAD'), 'utf8').trim()
    if (oid.test(head)) return head
    const ref = /^ref: (refs\/[^\s]+)$/.exec(head)?.[1]
    if (!ref) return undefined
    if (existsSync(join(projectGit, ref))) {
      const loose = readFileSync(join(projectGit, ref), 'utf8').trim()
      return oid.test(loose) ? loose : undefined
    }
    for (const line of readFileSync(join(projectGit, 'packed-refs'), 'utf8').split('\n'))
      if (line.endsWith(` ${ref}`) && oid.test(line.slice(0, 40))) return line.slice(0, 40)
  } catch {}
  return undefined
}

/** The number of entries a git index holds, from its header (0 for none, or a file that is no index). */
function indexEntries(file: string): number {
  const header = Buffer.alloc(12)
  let fd: number | undefined
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
    if (!fstatSync(fd).isFile()) return 0
    if (readSync(fd, header, 0, 12, 0) < 12 || header.toString('latin1', 0, 4) !== 'DIRC') return 0
    return header.readUInt32BE(8)
  } catch {
    return 0
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** A git index's trailing checksum (SHA-1 over all that comes before it), or undefined when there is none. */
function checksum(file: string): string | undefined {
  let fd: number | undefined
  try {
    fd = openSync(file, 'r')
    const { size } = fstatSync(fd)
    if (size < 32) return undefined
    const sum = Buffer.alloc(20)
    readSync(fd, sum, 0, 20, size - 20)
    return `${size}:${sum.toString('hex')}`
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** What `git init --bare --shared=0600` writes that git needs. */
const CONFIG = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n\tsharedrepository = 0600\n'

/**
 * A bare repository at `gitDir`, written directly (one git process less before a folder's first snapshot): made
 * aside and renamed into place, so a process racing this one finds all of it or none. Private: the shadow holds
 * copies of the person's files, some of them 0600 in the work tree. False when a folder that is no repository is
 * in the way.
 */
function createRepository(gitDir: string): boolean {
  const parent = dirname(gitDir)
  mkdirSync(parent, { recursive: true, mode: 0o700 })
  const aside = mkdtempSync(join(parent, '.init-'))
  try {
    for (const dir of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags', 'info'])
      mkdirSync(join(aside, dir), { recursive: true, mode: 0o700 })
    writeFileSync(join(aside, 'config'), CONFIG, { mode: 0o600 })
    writeFileSync(join(aside, 'HEAD'), 'ref: refs/heads/master\n', { mode: 0o600 })
    renameSync(aside, gitDir)
    return true
  } catch {
    rmSync(aside, { recursive: true, force: true })
    return existsSync(join(gitDir, 'HEAD'))
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
