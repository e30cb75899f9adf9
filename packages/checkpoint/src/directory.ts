import { keelHome } from '@keel/session/paths'
import { type Limits, Shadow, sameLimits } from './shadow.ts'

// No cordis here: print mode begins a folder's first snapshot from `prepare` before the plugins load.

/** A working directory's shadow, whether checkpoints are on there, and its captures, one at a time. */
export interface Directory {
  shadow: Shadow
  limits: Limits
  /** Settles once the first check is done: undefined, or why checkpoints are off here. */
  ready: Promise<string | undefined>
  /** The first check is done and found checkpoints on here. */
  on?: boolean
  /** Why checkpoints went off here later (a measure after a snapshot found the folder over a limit). */
  off?: string
  /** How many files the last measure found. */
  files?: number
  /** The limits were judged by the last process's figures: the first snapshot here measures again, beside it. */
  recalled?: boolean
  /**
   * The shadow had no index (its stat cache), no project index seeded one, and the folder is small enough to read at
   * once: `prepare` begins its first capture.
   */
  unread?: boolean
  /** The captures of the shadow's index, one at a time, in order. */
  queue: Promise<unknown>
  /** The last capture begun or queued. */
  latest?: Capture
  /** The first capture's warm-up, started when a session opens here. */
  warm?: Promise<void>
}

/** `git add -A` then `write-tree` on the shadow's index: the work tree as it was when `began`. */
export interface Capture {
  /** When git began to read the work tree (`performance.now()`); undefined while queued, so it begins later. */
  began?: number
  failed?: boolean
  /** The index holds the work tree: from here on a tool may change files (false: the capture failed). */
  added: Promise<boolean>
  tree: Promise<string>
}

/** A project with fewer files in its index is not seeded from it: they are hashed sooner than it is copied, checked
 * and its blobs packed (four git processes more). */
const SEED_MIN_ENTRIES = 256

/**
 * The folders `prepare` reads at once when nothing vouches for their files: about a tenth of a second of hashing. A
 * larger one gains little (the turn's own capture is a second pass over it) and would hold up the exit of a run that
 * fails before its session opens.
 */
const EARLY_READ = { files: 2000, bytes: 16_000_000 }

/** Folders whose first check and capture began at the process's start (`prepare`), until a service takes them. */
const prepared = new Map<string, Directory>()

/**
 * Begins what the first snapshot of `cwd` in this process needs, before anything asks for it: the shadow and the
 * limits check, and for a small folder whose first capture would read every file (cold, not seeded) that capture.
 * Print mode calls it as it starts, so the turn's own snapshot, which the first writing tool waits for, re-reads a
 * stat cache. That capture began before the turn did, so no turn takes it as its rewind point (`capture` queues a new
 * one after it). A warm or seeded shadow gets none: its capture is a pass over the stat cache, the turn's own already.
 */
export function prepare(cwd: string, limits: Limits): void {
  const shadow = new Shadow(cwd, keelHome())
  if (prepared.has(shadow.gitDir)) return
  const directory = makeDirectory(shadow, limits)
  prepared.set(shadow.gitDir, directory)
  directory.ready.then(
    (off) => {
      if (!off && directory.unread && !directory.latest) capture(directory, 0).tree.catch(() => {})
    },
    () => {},
  )
}

/** The folder's directory: the one `prepare` began, when its limits are these, or a new one. */
export function openDirectory(cwd: string, limits: Limits): Directory {
  const shadow = new Shadow(cwd, keelHome())
  const early = prepared.get(shadow.gitDir)
  prepared.delete(shadow.gitDir)
  if (early && sameLimits(early.limits, limits)) return early
  // Judged by other limits, it is checked again, its captures queued after the early ones (one index, one at a time).
  return makeDirectory(shadow, limits, early?.queue)
}

function makeDirectory(shadow: Shadow, limits: Limits, queue: Promise<unknown> = Promise.resolve()): Directory {
  const made: Directory = { shadow, limits, ready: Promise.resolve(undefined), queue }
  made.ready = check(made)
  return made
}

/**
 * Whether checkpoints are on here. A shadow with an index judges the limits by the figures the last process
 * measured (measured again beside the first snapshot), so a new process starts no walk of the tree before its first
 * snapshot; a cold one is seeded from the project's own index (when it is not a small one), then measured.
 */
async function check(directory: Directory): Promise<string | undefined> {
  const { shadow, limits } = directory
  try {
    await shadow.init()
    let size = shadow.warm() ? shadow.recall(limits) : undefined
    if (size) directory.recalled = true
    else if (shadow.projectEntries() >= SEED_MIN_ENTRIES) size = await shadow.seed(limits)
    if (!size) {
      const cold = !shadow.warm()
      size = await shadow.measure(limits)
      directory.unread = cold && size.files <= EARLY_READ.files && size.bytes <= EARLY_READ.bytes
    }
    directory.files = size.files
    if (size.over) return offLine(shadow.cwd, `it holds ${size.over}`)
    directory.on = true
    return undefined
  } catch (error) {
    return offLine(shadow.cwd, error instanceof Error ? error.message : String(error))
  }
}

/**
 * The capture a snapshot needing the work tree as it is now (`after`, a `performance.now()`) can use: the last one
 * when it began after that (or has not begun), else a new one queued after it.
 */
export function capture(directory: Directory, after: number): Capture {
  const latest = directory.latest
  if (latest && !latest.failed && (latest.began === undefined || latest.began >= after)) return latest
  const previous = directory.queue
  let added!: (ok: boolean) => void
  const capture: Capture = { added: new Promise((done) => (added = done)), tree: Promise.resolve('') }
  capture.tree = (async () => {
    await previous
    capture.began = performance.now()
    try {
      await directory.shadow.add()
    } catch (error) {
      capture.failed = true
      added(false)
      throw error
    }
    added(true)
    try {
      return await directory.shadow.writeTree()
    } catch (error) {
      capture.failed = true
      throw error
    }
  })()
  directory.queue = capture.tree.catch(() => {})
  directory.latest = capture
  return capture
}

/** The limits judged by the last process's figures are measured again, once, beside the first snapshot here. */
export function remeasure(directory: Directory): void {
  if (!directory.recalled) return
  directory.recalled = false
  directory.shadow.measure(directory.limits).then(
    (size) => {
      directory.files = size.files
      if (size.over) directory.off = offLine(directory.shadow.cwd, `it holds ${size.over}`)
    },
    () => {},
  )
}

export function offLine(cwd: string, why: string): string {
  return `checkpoints are off for ${cwd}: ${why}; files cannot be rewound there`
}
