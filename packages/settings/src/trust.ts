// Workspace trust. A cloned repository is someone else's: until the person trusts the folder, its project files may
// only narrow what Keel does (deny rules, a stricter mode, more protected paths). Everything else they say is held
// back and listed. Trust is keyed by the folder's real path and a hash of the files that would widen, so a change
// to them asks again. The person's own $KEEL_HOME files always apply.
import { createHash, randomBytes } from 'node:crypto'
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  writeFileSync,
} from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { readSettingsFiles, settingsPaths, type SettingsFile } from './files.ts'
import { projectRoot } from './root.ts'

/** A setting a project file asked for and did not get, because the folder is not trusted. */
export interface HeldSetting {
  /** The file that asked. */
  file: string
  /** Dotted key: `mode`, `permissions.allow`, `mcpServers`. */
  key: string
}

export interface TrustState {
  /** The real path of the project root: what trust is recorded for. */
  folder: string
  /**
   * The project files and folders that trust covers and that exist: the `.keel/settings*.json` files from the root
   * down, then each of `TRUSTED_PATHS` under the root.
   */
  files: string[]
  /** Hash of those files' paths and bytes; '' when there are none. */
  hash: string
  /** True when there is nothing to trust, the person trusted exactly these files, or `--trust` said so. */
  trusted: boolean
}

/** The largest project file hashed; a bigger one is hashed by its size only and is never trusted by accident. */
const MAX_HASHED = 1024 * 1024

let trustedForRun = false

/** `--trust`: every folder this process opens is trusted for this run only; nothing is recorded. */
export function trustForThisRun(): void {
  trustedForRun = true
}

/** Whether `--trust` was given: it changes every trust answer without a file changing (snapshot.ts). */
export function trustedThisRun(): boolean {
  return trustedForRun
}

function storePath(): string {
  return join(keelHome(), 'trust.json')
}

function real(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return resolve(path)
  }
}

/** Reads at most MAX_HASHED bytes of a regular file, never following a FIFO's block; undefined when absent. */
function fileBytes(path: string): Buffer | undefined {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile()) return Buffer.from(`not a file: ${stats.mode}`)
    if (stats.size > MAX_HASHED) return Buffer.from(`size ${stats.size} ${stats.mtimeMs}`)
    const buffer = Buffer.alloc(stats.size)
    let read = 0
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read)
      if (!n) break
      read += n
    }
    return buffer.subarray(0, read)
  } finally {
    closeSync(fd)
  }
}

/**
 * Beyond the settings files, what a project holds that changes what a run does, relative to its root: a file, or a
 * folder hashed whole (every file below it). Trust covers their bytes, so a trusted folder does not silently trust a
 * later change to them; until trust, what they would run is held back under `holds`. A package that reads another
 * such file or folder from the project adds it here, and the gate covers it.
 */
export const TRUSTED_PATHS: readonly { path: string; holds: string }[] = [
  { path: '.mcp.json', holds: 'mcpServers' },
  // Slash command files (@keel/extend): their `` !`cmd` `` lines run a shell command.
  { path: '.keel/commands', holds: 'commands' },
  { path: '.claude/commands', holds: 'commands' },
  // Agent definitions (@keel/extend): their `model` and `tools` change what a subagent runs with.
  { path: '.keel/agents', holds: 'agents' },
  { path: '.claude/agents', holds: 'agents' },
]

/** A folder hashed past this many files, or this deep, is hashed by its count only: it is never trusted by accident. */
const MAX_FOLDER_FILES = 2000
const MAX_DEPTH = 16

/**
 * Every entry below `dir` in a stable order, as `path\0bytes` chunks (a link by its target, never followed). `seen`
 * gets each entry looked at below `dir` (snapshot.ts stats them to tell whether the hash may have changed).
 */
function folderBytes(dir: string, seen?: string[]): Buffer | undefined {
  try {
    if (!lstatSync(dir).isDirectory()) return fileBytes(dir)
  } catch {
    return undefined
  }
  const chunks: Buffer[] = []
  let count = 0
  const walk = (at: string, depth: number): boolean => {
    let names: string[]
    try {
      names = readdirSync(at).sort()
    } catch {
      chunks.push(Buffer.from(`unreadable ${relative(dir, at)}\0`))
      return true
    }
    for (const name of names) {
      if (++count > MAX_FOLDER_FILES || depth > MAX_DEPTH) return false
      const path = join(at, name)
      seen?.push(path)
      const rel = relative(dir, path)
      let stats
      try {
        stats = lstatSync(path)
      } catch {
        continue
      }
      if (stats.isSymbolicLink()) chunks.push(Buffer.from(`${rel}\0link ${readlinkSync(path)}\0`))
      else if (stats.isDirectory()) {
        if (!walk(path, depth + 1)) return false
      } else {
        const bytes = fileBytes(path) ?? Buffer.alloc(0)
        chunks.push(Buffer.from(`${rel}\0${bytes.length}\0`), bytes)
      }
    }
    return true
  }
  if (!walk(dir, 0)) return Buffer.from(`too many files: more than ${MAX_FOLDER_FILES} or ${MAX_DEPTH} deep`)
  return Buffer.concat(chunks)
}

function projectFiles(cwd: string): string[] {
  const paths = settingsPaths(cwd)
    .filter((entry) => entry.scope === 'project')
    .map((entry) => entry.path)
  const root = projectRoot(cwd)
  return [...paths, ...TRUSTED_PATHS.map((entry) => join(root, entry.path))]
}

/** Per project root, the hashes the person trusted (a subfolder with files of its own has a hash of its own). */
type Store = { folders: Record<string, { hashes: string[]; at: string }> }

/** Hashes kept per folder: enough for its subfolders, without growing with every edit. */
const KEPT_HASHES = 16

function readStore(): Store {
  try {
    const data = JSON.parse(readFileSync(storePath(), 'utf8')) as Store
    if (data && typeof data === 'object' && data.folders && typeof data.folders === 'object') {
      for (const [folder, entry] of Object.entries(data.folders))
        if (!entry || !Array.isArray(entry.hashes)) delete data.folders[folder]
      return data
    }
  } catch {}
  return { folders: {} }
}

/**
 * Whether the folder of `cwd` is trusted, and what its trust would cover. `seen` gets every path the answer depends
 * on: the real cwd, the project files and every entry of their folders, the trust record.
 */
export function trustState(cwd: string, seen?: string[]): TrustState {
  const at = real(cwd)
  const folder = real(projectRoot(at))
  const hasher = createHash('sha256')
  const files: string[] = []
  seen?.push(storePath())
  for (const path of projectFiles(at)) {
    seen?.push(path)
    const bytes = folderBytes(path, seen)
    // An empty file or folder configures nothing, as an absent one: it is also what the sandbox keeps where a missing
    // `.mcp.json` or `.keel/commands` is while a command runs (its mount point), which must not cost the folder its trust.
    if (bytes === undefined || bytes.length === 0) continue
    files.push(path)
    hasher.update(`${path}\0${bytes.length}\0`).update(bytes)
  }
  const hash = files.length ? hasher.digest('hex') : ''
  const trusted = !files.length || trustedForRun || !!readStore().folders[folder]?.hashes.includes(hash)
  return { folder, files, hash, trusted }
}

/** Records trust for the folder of `cwd` as its project files are now (`keel trust`, the TUI's and web UI's yes). */
export function trustFolder(cwd: string): TrustState {
  const state = trustState(cwd)
  const store = readStore()
  const hashes = (store.folders[state.folder]?.hashes ?? []).filter((hash) => hash !== state.hash)
  store.folders[state.folder] = { hashes: [...hashes, state.hash].slice(-KEPT_HASHES), at: new Date().toISOString() }
  const path = storePath()
  mkdirSync(keelHome(), { recursive: true, mode: 0o700 })
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`
  writeFileSync(temp, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 })
  renameSync(temp, path)
  return { ...state, trusted: true }
}

/**
 * After Keel itself rewrote a project file of a trusted folder (the person's "always" saved a rule), the trust follows
 * the new bytes: the person chose that change, the agent did not.
 */
export function keepTrustAfter(cwd: string, change: () => void): void {
  const before = trustState(cwd)
  change()
  // Trusted for this run only (--trust) vouches for nothing beyond it, unless the change made the first file.
  if (!before.files.length || (before.trusted && !trustedForRun)) trustFolder(cwd)
}

// Plan mode writes nothing until the person approves: it narrows like read-only.
const MODE_ORDER = ['read-only', 'plan', 'ask', 'auto', 'yolo']

function providerOf(model: unknown): string | undefined {
  return typeof model === 'string' ? model.split('/')[0] : undefined
}

/**
 * What an untrusted project file keeps: only what narrows. `baseModel` is the model the person's own settings (or
 * the default) pick: a project may choose another model of the same provider, never send the key elsewhere.
 */
function narrowing(key: string, value: unknown, baseModel: string): { keep?: unknown; held: string[] } {
  switch (key) {
    case 'mode':
      return MODE_ORDER.indexOf(String(value)) >= 0 && MODE_ORDER.indexOf(String(value)) <= MODE_ORDER.indexOf('ask')
        ? { keep: value, held: [] }
        : { held: ['mode'] }
    case 'protectedPaths':
      return { keep: value, held: [] }
    // Print mode's limits (max turns, a timeout, a budget, failing on a denial) only ever stop a run sooner.
    case 'print':
      return { keep: value, held: [] }
    case 'model':
      return providerOf(value) === providerOf(baseModel) ? { keep: value, held: [] } : { held: ['model'] }
    case 'permissions': {
      if (!value || typeof value !== 'object' || Array.isArray(value)) return { held: ['permissions'] }
      const { deny, ...rest } = value as Record<string, unknown>
      return {
        ...(deny !== undefined ? { keep: { deny } } : {}),
        held: Object.keys(rest).map((inner) => `permissions.${inner}`),
      }
    }
    case 'sandbox': {
      if (!value || typeof value !== 'object' || Array.isArray(value)) return { held: ['sandbox'] }
      const { level, ...rest } = value as Record<string, unknown>
      const keepLevel = level === 'read-only' || level === 'workspace'
      const held = Object.keys(rest).map((inner) => `sandbox.${inner}`)
      if (level !== undefined && !keepLevel) held.push('sandbox.level')
      return { ...(keepLevel ? { keep: { level } } : {}), held }
    }
    case 'store':
      // Where the session logs go (and the approvals answered through them): never a database a project names.
      return { held: ['store'] }
    default:
      // Every other key (baseUrl, providers' headers, mcpServers, plugin settings such as fs, shell, checkpoint) may
      // widen, send the person's requests elsewhere or run code.
      return { held: [key] }
  }
}

/**
 * The project files as an untrusted folder may use them, and what was held back. The user's own files (scope
 * `user`) pass whole. `baseModel` as for `narrowing`.
 */
export function gateSettings(
  files: SettingsFile[],
  state: TrustState,
  baseModel: string,
): { files: SettingsFile[]; held: HeldSetting[] } {
  if (state.trusted) return { files, held: [] }
  const held: HeldSetting[] = []
  const kept = files.map((file) => {
    if (file.scope !== 'project') return file
    const data: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(file.data)) {
      const verdict = narrowing(key, value, baseModel)
      if (verdict.keep !== undefined) data[key] = verdict.keep
      for (const name of verdict.held) held.push({ file: file.path, key: name })
    }
    return { ...file, data }
  })
  for (const entry of TRUSTED_PATHS) {
    const path = join(state.folder, entry.path)
    if (state.files.includes(path)) held.push({ file: path, key: entry.holds })
  }
  return { files: kept, held }
}

/** The one line that lists what an untrusted folder asked for and did not get (raw: a door escapes it). */
export function heldLine(held: HeldSetting[], folder: string): string | undefined {
  if (!held.length) return undefined
  const keys = [...new Set(held.map((entry) => entry.key))]
  return `${folder} is not trusted: held back ${keys.join(', ')} from its project files (trust it with keel trust, or --trust for this run)`
}

/** What a door offers for the folder of `cwd`: whether it is trusted, the keys its files ask for, the files. */
export interface TrustOffer {
  folder: string
  trusted: boolean
  /** The held keys, each once (`mode`, `permissions.allow`, `mcpServers`, `commands`). */
  held: string[]
  files: string[]
}

/** The trust offer for `cwd` as the gate sees it now (`baseModel` as for `gateSettings`). */
export function trustOffer(cwd: string, baseModel: string): TrustOffer {
  const state = trustState(cwd)
  const { held } = gateSettings(readSettingsFiles(cwd), state, baseModel)
  return {
    folder: state.folder,
    trusted: state.trusted,
    held: [...new Set(held.map((entry) => entry.key))],
    files: state.files,
  }
}
