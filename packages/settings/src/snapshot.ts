// The settings files and trust of a folder, read once and kept while nothing they were read from changed. A
// permission check needs them for every call; reading and hashing them each time cost ~0.3 ms of synchronous IO. A
// person's edit (or `keel trust` in another terminal) must still count at the next check, so each use stats every
// path the answer depends on and reads again when one differs; the agent may not write these files at all.
import { lstatSync, realpathSync, type Stats, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { readSettingsFiles, type SettingsError, type SettingsFile, settingsPaths } from './files.ts'
import { type TrustState, trustedThisRun, trustState } from './trust.ts'

export interface SettingsSnapshot {
  /** The settings files of the folder, lowest precedence first; empty when one could not be used (`error`). */
  files: SettingsFile[]
  /** Why the files could not be used, as readSettingsFiles throws it. */
  error?: SettingsError
  trust: TrustState
}

/** How a path is compared: only whether it exists (`.git`, whose mtime every git command moves), or its stat. */
type Probe = 'exists' | 'stat'

interface Kept {
  key: string
  paths: [string, Probe][]
  marks: string[]
  snapshot: SettingsSnapshot
}

/**
 * A file written this close before a read may have been written again within the same timestamp tick (or between
 * the read and the stat): such an answer is not kept. File times come from the kernel's coarse clock, a tick or so
 * behind Date.now().
 */
const RACY_MS = 100
/** Folders kept: one process serves a few (keel acp, serve --all); past this the oldest goes. */
const KEPT_FOLDERS = 64

const kept = new Map<string, Kept>()

/**
 * A path's mark (what a change would alter) and its mtime (0 for `exists`). The change time is in the mark, not in
 * the racy test: a content write moves the mtime, and a file replaced by a rename is a new inode.
 */
function mark(path: string, probe: Probe): { mark: string; at: number } {
  let stats: Stats | undefined
  try {
    stats = statSync(path, { throwIfNoEntry: false })
  } catch (error) {
    return { mark: `error ${(error as NodeJS.ErrnoException).code}`, at: 0 }
  }
  if (!stats) return { mark: '-', at: 0 }
  if (probe === 'exists') return { mark: '+', at: 0 }
  return {
    mark: `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`,
    at: stats.mtimeMs,
  }
}

/** `.git` at each folder from `cwd` up to the project root (or the filesystem root): where projectRoot looks. */
function rootProbes(cwd: string): string[] {
  const probes: string[] = []
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    probes.push(join(dir, '.git'))
    if (lstatSync(join(dir, '.git'), { throwIfNoEntry: false }) || dirname(dir) === dir) return probes
  }
}

function realOr(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return resolve(path)
  }
}

function read(cwd: string): { snapshot: SettingsSnapshot; paths: [string, Probe][] } {
  const seen: string[] = []
  const trust = trustState(cwd, seen)
  const probes = new Set([...rootProbes(cwd), ...rootProbes(realOr(cwd))])
  const paths: [string, Probe][] = [
    ...[...probes].map((path): [string, Probe] => [path, 'exists']),
    ...[...new Set([...settingsPaths(cwd).map(({ path }) => path), ...seen])].map((path): [string, Probe] => [
      path,
      'stat',
    ]),
  ]
  try {
    return { snapshot: { files: readSettingsFiles(cwd), trust }, paths }
  } catch (error) {
    return { snapshot: { files: [], error: error as SettingsError, trust }, paths }
  }
}

/**
 * The settings files and trust state of `cwd`: the same object while none of the files, folders and records they
 * were read from changed (each call stats those paths), else read again.
 */
export function settingsSnapshot(cwd: string): SettingsSnapshot {
  const key = `${keelHome()}\0${trustedThisRun()}`
  const hit = kept.get(cwd)
  if (hit && hit.key === key && hit.paths.every(([path, probe], i) => mark(path, probe).mark === hit.marks[i]))
    return hit.snapshot
  const started = Date.now()
  const { snapshot, paths } = read(cwd)
  const marks = paths.map(([path, probe]) => mark(path, probe))
  kept.delete(cwd)
  if (marks.every(({ at }) => at < started - RACY_MS)) {
    kept.set(cwd, { key, paths, marks: marks.map(({ mark }) => mark), snapshot })
    if (kept.size > KEPT_FOLDERS) kept.delete(kept.keys().next().value!)
  }
  return snapshot
}
