// bubblewrap makes an empty file or folder on the host for each missing path a workspace command's binds land on (the
// cwd's absent `.bashrc`, `.keel`, `.vscode`…), and the runtime removes them when the command is cleaned up or the
// process exits. A Keel killed by a signal it cannot handle leaves them in the person's folder. The runtime keeps
// its list to itself, so each process writes the missing bind targets of its commands to a journal of its own under
// $KEEL_HOME before it spawns them, and the next process to load the sandbox removes what a dead one left.
//
// They are also made here, before the wrap is handed out, rather than by bwrap once its process starts: the runtime
// decides each command's mounts from what is on disk when it wraps it, and a second command wrapped while the first
// one's bwrap was making them (two `bash` calls of one step, a background job and the next command) saw half of them:
// `.claude` made but `.claude/commands` not, so it mounted a placeholder inside a folder it had made read-only, and
// bwrap refused to start ("Can't create file at …/.claude/commands: Read-only file system").
import { lstat, mkdir, readdir, readFile, realpath, rename, rmdir, stat, unlink, writeFile } from 'node:fs/promises'
import { dirname, isAbsolute, join, sep } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { splitQuoted } from './argv.ts'
import { deadJournals } from './journal.ts'
import { points } from './mount-points.ts'

/** bwrap's options that mount `<src>` on `<dest>`, creating `dest` when it is missing. */
const BINDS = new Set(['--bind', '--bind-try', '--ro-bind', '--ro-bind-try', '--dev-bind', '--dev-bind-try'])

function journalDir(): string {
  return join(keelHome(), 'sandbox-placeholders')
}

/**
 * The bind targets of a wrapped command that do not exist now: what bwrap will make on the host. From the words
 * spawned (bwrap's own, or the runtime's `bash -c <line>` when that was left as it is); a line whose mounts go
 * through a file names none, so nothing is recorded for it.
 */
async function missingTargets(file: string, args: readonly string[]): Promise<Bind[]> {
  const words = file.endsWith('/bwrap') ? args : args[0] === '-c' ? (splitQuoted(args[1] ?? '') ?? []) : []
  const binds: Bind[] = []
  for (let at = 0; at < words.length && words[at] !== '--'; at++)
    if (BINDS.has(words[at]!) && at + 2 < words.length) {
      binds.push({ source: words[at + 1]!, target: words[at + 2]! })
      at += 2
    }
  const missing = await Promise.all(
    binds.map((bind) =>
      lstat(bind.target).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? bind : undefined),
      ),
    ),
  )
  const seen = new Set<string>()
  return missing.filter((bind): bind is Bind => bind !== undefined && !seen.has(bind.target) && !!seen.add(bind.target))
}

interface Bind {
  source: string
  target: string
}

/**
 * Makes the mount points bwrap would make: an empty folder for a folder's bind, else an empty file, never a folder
 * above it (the runtime's placeholders are the first missing part of a path). All at once, then again one by one for
 * those whose folder was another one's placeholder; what still fails is left to bwrap, as before. Only where the
 * folder that holds it, links resolved, lies in `writable` (what the command may write itself): a link in the
 * project can point the runtime's target anywhere, and Keel writes with the person's rights, not the sandbox's.
 */
async function makeMountPoints(binds: Bind[], writable: readonly string[]): Promise<void> {
  const roots = await Promise.all(writable.map((root) => realpath(root).catch(() => undefined)))
  const inside = async (target: string) => {
    const folder = await realpath(dirname(target)).catch(() => undefined)
    return (
      folder !== undefined &&
      roots.some((root) => root !== undefined && (folder === root || folder.startsWith(`${root}${sep}`)))
    )
  }
  const folders = new Map<string, Promise<boolean>>()
  const isFolder = (source: string) => {
    let known = folders.get(source)
    if (!known) {
      known = stat(source).then(
        (info) => info.isDirectory(),
        () => false,
      )
      folders.set(source, known)
    }
    return known
  }
  const make = async ({ source, target }: Bind) => {
    try {
      if (!(await inside(target))) return true
      if (await isFolder(source)) await mkdir(target)
      else await writeFile(target, '', { flag: 'wx' })
      return true
    } catch {
      return false
    }
  }
  const made = await Promise.all(binds.map(make))
  for (const bind of binds.filter((_, i) => !made[i]).sort((a, b) => a.target.length - b.target.length))
    await make(bind)
}

/**
 * This process's journal: the placeholders of every command wrapped since none was running. The runtime removes
 * them only once its last running command is cleaned up, so the journal goes at that moment too.
 */
const journal = { paths: points, running: 0, writes: Promise.resolve() }

function writeJournal(): Promise<void> {
  const dir = journalDir()
  const file = join(dir, `${process.pid}.json`)
  const next = journal.writes.then(async () => {
    if (journal.running === 0 || journal.paths.size === 0) {
      await unlink(file).catch(() => {})
      return
    }
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const partial = join(dir, `${process.pid}.tmp`)
    await writeFile(partial, JSON.stringify({ paths: [...journal.paths] }))
    await rename(partial, file)
  })
  // A journal that cannot be written costs only the clean-up after a crash; the command still runs.
  journal.writes = next.catch(() => {})
  return journal.writes
}

/**
 * Records the placeholders bwrap would make for the command about to be spawned, then makes them; the returned
 * function, called once the runtime has cleaned up after it, takes them off the journal again.
 */
export async function recordPlaceholders(
  file: string,
  args: readonly string[],
  writable: readonly string[],
): Promise<() => Promise<void>> {
  const missing = await missingTargets(file, args)
  const paths = missing.map((bind) => bind.target)
  journal.running++
  for (const path of paths) journal.paths.add(path)
  if (paths.length) await writeJournal()
  // After the journal names them.
  await makeMountPoints(missing, writable)
  let released = false
  return async () => {
    if (released) return
    released = true
    journal.running--
    if (journal.running > 0) return
    journal.paths.clear()
    await writeJournal()
  }
}

/** Still what bwrap made: an empty regular file or an empty folder (not a link). */
async function stillPlaceholder(path: string): Promise<boolean> {
  try {
    const stat = await lstat(path)
    if (stat.isFile()) return stat.size === 0
    return stat.isDirectory() && (await readdir(path)).length === 0
  } catch {
    return false
  }
}

/**
 * Every word of every running process's command line (Linux): a bwrap that outlived its Keel names its mount
 * targets there, and removing one under it would take that sandbox's deny away.
 */
async function namedByRunning(): Promise<Set<string>> {
  const words = new Set<string>()
  const pids = await readdir('/proc').catch(() => [] as string[])
  await Promise.all(
    pids
      .filter((name) => /^\d+$/.test(name))
      .map((pid) =>
        readFile(`/proc/${pid}/cmdline`, 'utf8').then(
          (line) => {
            for (const word of line.split('\0')) words.add(word)
          },
          () => {},
        ),
      ),
  )
  return words
}

let swept: Promise<void> | undefined

/**
 * Removes what dead Keel processes' commands left: each recorded path that is still an empty placeholder and that no
 * running process names (see {@link namedByRunning}); a path the person has since filled stays, and one that existed
 * before the command was never recorded. A live process's journal is left alone. Once per process, before its
 * first wrap; never fails.
 */
export function sweepPlaceholders(dir = journalDir()): Promise<void> {
  if (dir !== journalDir()) return sweep(dir)
  swept ??= sweep(dir)
  return swept
}

async function sweep(dir: string): Promise<void> {
  const dead = await deadJournals(dir)
  const recorded = new Set<string>()
  for (const record of dead.records) {
    const paths = (record as { paths?: unknown } | undefined)?.paths
    if (Array.isArray(paths))
      for (const path of paths) if (typeof path === 'string' && isAbsolute(path)) recorded.add(path)
  }
  const left = (await Promise.all([...recorded].map(async (path) => ((await stillPlaceholder(path)) ? path : ''))))
    .filter(Boolean)
    .sort((a, b) => b.length - a.length)
  const named = left.length ? await namedByRunning() : new Set<string>()
  // Deepest first, and each checked again right before it goes: a folder holding a file goes nowhere.
  for (const path of left) {
    if (named.has(path) || !(await stillPlaceholder(path))) continue
    const stat = await lstat(path).catch(() => undefined)
    await (stat?.isDirectory() ? rmdir(path) : unlink(path)).catch(() => {})
  }
  await dead.remove()
}
