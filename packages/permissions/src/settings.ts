// "Always allow" writes the rule where the person will find it: `<project root>/.keel/settings.json`, under
// `permissions.allow`, keeping every other key. The project root is the nearest ancestor with `.git`, else the cwd.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { keepTrustAfter, projectRoot } from '@keel/settings'

export function projectSettingsPath(cwd: string): string {
  return join(projectRoot(cwd), '.keel', 'settings.json')
}

/**
 * Adds `rule` to `permissions.allow` (or `.deny`) of the project settings file, creating it, and returns the file's
 * path. Throws with a one-line reason when the file is not what it should be: a person's file is never clobbered.
 */
export function appendRule(cwd: string, list: 'allow' | 'deny', rule: string): string {
  const path = projectSettingsPath(cwd)
  let settings: Record<string, unknown> = {}
  if (existsSync(path)) {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'))
    } catch (error) {
      throw new Error(`${path} is not valid JSON (${(error as Error).message}); the rule was not saved`)
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error(`${path} does not hold a JSON object; the rule was not saved`)
    settings = parsed as Record<string, unknown>
  }
  const permissions = settings.permissions
  if (permissions !== undefined && (!permissions || typeof permissions !== 'object' || Array.isArray(permissions))) {
    throw new Error(`${path}: "permissions" is not an object; the rule was not saved`)
  }
  const perms = (permissions ?? {}) as Record<string, unknown>
  const existing = perms[list]
  if (existing !== undefined && !Array.isArray(existing))
    throw new Error(`${path}: "permissions.${list}" is not a list; the rule was not saved`)
  const rules = (existing ?? []) as unknown[]
  if (!rules.includes(rule)) {
    settings.permissions = { ...perms, [list]: [...rules, rule] }
    // The person chose this rule, so a trusted folder stays trusted with it (the agent's own tools cannot write here).
    keepTrustAfter(cwd, () => {
      mkdirSync(dirname(path), { recursive: true })
      // Write beside it and rename, so a crash never leaves half a settings file.
      const temp = `${path}.${process.pid}.tmp`
      writeFileSync(temp, JSON.stringify(settings, null, 2) + '\n')
      renameSync(temp, path)
    })
  }
  return path
}
