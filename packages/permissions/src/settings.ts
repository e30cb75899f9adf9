// "Always" writes the rules where the person will find them: `<project root>/.keel/settings.local.json` (personal,
// not committed: Keel git-ignores it in `.keel/.gitignore` when it creates it, inside Keel's own folder, so no
// checkpoint takes or reverts the line and the project's own .gitignore is left alone) or, when the person picks it, the
// shared `<project root>/.keel/settings.json`; under `permissions.allow` (or `.deny`), keeping every other key. The
// project root is the nearest ancestor with `.git`, else the cwd. Only Keel writes here, never the agent's tools.
import {
  appendFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { keepTrustAfter, projectRoot } from '@keel/settings'
import type { RuleFile } from './types.ts'

const FILE_NAMES: Record<RuleFile, string> = { local: 'settings.local.json', project: 'settings.json' }
const LOCAL_IGNORE = 'settings.local.json'

export function projectSettingsPath(cwd: string, file: RuleFile = 'project'): string {
  return join(projectRoot(cwd), '.keel', FILE_NAMES[file])
}

/** Both files "always" can write, by choice. */
export function ruleFiles(cwd: string): Record<RuleFile, string> {
  return { local: projectSettingsPath(cwd, 'local'), project: projectSettingsPath(cwd, 'project') }
}

/** Reads a settings file as an object to change, or throws with a one-line reason (a person's file is never clobbered). */
function readObject(path: string): Record<string, unknown> {
  if (!existsSync(path)) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new Error(`${path} is not valid JSON (${(error as Error).message}); nothing was saved`)
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error(`${path} does not hold a JSON object; nothing was saved`)
  return parsed as Record<string, unknown>
}

/** `settings[key]` as an object (created when missing), or throws naming the key. */
function section(settings: Record<string, unknown>, key: string, path: string): Record<string, unknown> {
  const value = settings[key]
  if (value !== undefined && (!value || typeof value !== 'object' || Array.isArray(value)))
    throw new Error(`${path}: "${key}" is not an object; nothing was saved`)
  return (value ?? {}) as Record<string, unknown>
}

function list(object: Record<string, unknown>, key: string, where: string, path: string): unknown[] {
  const value = object[key]
  if (value !== undefined && !Array.isArray(value))
    throw new Error(`${path}: "${where}" is not a list; nothing was saved`)
  return (value ?? []) as unknown[]
}

/** Writes beside it and renames, so a crash never leaves half a settings file; a new local file is git-ignored. */
function save(path: string, settings: Record<string, unknown>, file: RuleFile): void {
  const created = !existsSync(path)
  keelFolder(dirname(path))
  const temp = `${path}.${process.pid}.tmp`
  writeFileSync(temp, JSON.stringify(settings, null, 2) + '\n')
  renameSync(temp, path)
  if (created && file === 'local') ignoreLocal(dirname(path))
}

/**
 * Creates the project's `.keel` folder. While a sandboxed command runs (a background job, or the command whose host
 * the person just allowed), a missing `.keel` is the empty file the sandbox mounts over to protect it, and removes
 * once the command ends: Keel's own folder takes its place (the sandbox leaves a folder with content alone).
 */
function keelFolder(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true })
  } catch (error) {
    const stats = (error as NodeJS.ErrnoException).code === 'EEXIST' ? lstatSync(dir) : undefined
    if (!stats?.isFile() || stats.size !== 0) throw error
    unlinkSync(dir)
    mkdirSync(dir)
  }
}

function ignoreLocal(keelDir: string): void {
  const ignore = join(keelDir, '.gitignore')
  const text = existsSync(ignore) ? readFileSync(ignore, 'utf8') : ''
  if (text.split(/\r?\n/).some((line) => line.trim() === LOCAL_IGNORE || line.trim() === `/${LOCAL_IGNORE}`)) return
  appendFileSync(ignore, `${text && !text.endsWith('\n') ? '\n' : ''}${LOCAL_IGNORE}\n`)
}

/**
 * Adds `rules` to `permissions.allow` (or `.deny`) of the chosen project settings file, creating it, and returns the
 * file's path. Throws with a one-line reason when the file is not what it should be.
 */
export function appendRules(cwd: string, to: 'allow' | 'deny', rules: readonly string[], file: RuleFile): string {
  const path = projectSettingsPath(cwd, file)
  const settings = readObject(path)
  const permissions = section(settings, 'permissions', path)
  const existing = list(permissions, to, `permissions.${to}`, path)
  const added = rules.filter((rule) => !existing.includes(rule))
  if (added.length) {
    settings.permissions = { ...permissions, [to]: [...existing, ...added] }
    // The person chose this rule, so a trusted folder stays trusted with it (the agent's own tools cannot write here).
    keepTrustAfter(cwd, () => save(path, settings, file))
  }
  return path
}

/** Adds `host` to `sandbox.allowedDomains` of the chosen project settings file and returns the file's path. */
export function appendAllowedDomain(cwd: string, host: string, file: RuleFile): string {
  const path = projectSettingsPath(cwd, file)
  const settings = readObject(path)
  const sandbox = section(settings, 'sandbox', path)
  const existing = list(sandbox, 'allowedDomains', 'sandbox.allowedDomains', path)
  if (!existing.includes(host)) {
    settings.sandbox = { ...sandbox, allowedDomains: [...existing, host] }
    keepTrustAfter(cwd, () => save(path, settings, file))
  }
  return path
}
