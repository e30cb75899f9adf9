import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { projectDirs } from './root.ts'

export type Settings = Record<string, unknown>

/** A settings file that cannot be used: the message is one line naming the file (and the key, when one is wrong). */
export class SettingsError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SettingsError'
  }
}

export interface SettingsFile {
  path: string
  scope: 'user' | 'project'
  data: Settings
}

/**
 * `$KEEL_HOME/settings.json`, then `.keel/settings.json` and the personal, git-ignored `.keel/settings.local.json`
 * (where "always allow" saves by default) of every folder from the project root down to `cwd`.
 */
export function settingsPaths(cwd: string): { path: string; scope: SettingsFile['scope'] }[] {
  const user = join(keelHome(), 'settings.json')
  const paths: { path: string; scope: SettingsFile['scope'] }[] = [{ path: user, scope: 'user' }]
  for (const dir of projectDirs(cwd)) {
    for (const name of ['settings.json', 'settings.local.json']) {
      const path = join(dir, '.keel', name)
      if (path !== user) paths.push({ path, scope: 'project' })
    }
  }
  return paths
}

/** Credentials belong in the environment, never in a file that may be committed or shared. */
const CREDENTIAL =
  /^(api[-_]?key|token|auth[-_]?token|access[-_]?token|secret|client[-_]?secret|password|.*_(API_KEY|TOKEN|SECRET))$/i

function findCredential(value: unknown, path: string): string | undefined {
  if (!value || typeof value !== 'object') return undefined
  for (const [key, inner] of Object.entries(value)) {
    const here = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key
    if (!Array.isArray(value) && CREDENTIAL.test(key)) return here
    const deeper = findCredential(inner, here)
    if (deeper) return deeper
  }
  return undefined
}

/** Reads one settings file; a missing file is undefined, anything else wrong is a SettingsError. */
export function readSettingsFile(path: string, scope: SettingsFile['scope']): SettingsFile | undefined {
  let text: string
  try {
    if (!statSync(path).isFile()) throw new SettingsError(`${path}: not a file`)
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if (error instanceof SettingsError) throw error
    // A path below a file names no file: the sandbox keeps an empty file where a missing `.keel` is while a command
    // runs (its mount point), and a reader must not take that for a broken settings file.
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw new SettingsError(`${path}: cannot read: ${(error as Error).message}`)
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new SettingsError(`${path}: not valid JSON: ${(error as Error).message.split('\n')[0]}`)
  }
  if (!data || typeof data !== 'object' || Array.isArray(data))
    throw new SettingsError(`${path}: expected a JSON object of settings`)
  const credential = findCredential(data, '')
  if (credential) {
    throw new SettingsError(
      `${path}: refusing ${credential}: API keys and tokens stay in the environment (for example DEEPSEEK_API_KEY), never in a settings file`,
    )
  }
  return { path, scope, data: data as Settings }
}

/** Every settings file that exists for `cwd`, in precedence order (lowest first). */
export function readSettingsFiles(cwd: string): SettingsFile[] {
  return settingsPaths(cwd).flatMap(({ path, scope }) => readSettingsFile(path, scope) ?? [])
}
