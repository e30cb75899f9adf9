// The rules of the project a call runs in, read for the call's own cwd. One process can serve sessions in many
// folders (keel acp, serve --all), and each folder's deny rules must hold for its sessions; its allow rules count
// only once the person trusted the folder (@keel/settings' trust gate).
import { gateSettings, readSettingsFiles, trustState } from '@keel/settings'
import { parseRules, type Rule } from './rules.ts'

function listOf(value: unknown, key: 'allow' | 'deny'): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return []
  const list = (value as Record<string, unknown>)[key]
  return Array.isArray(list) ? list.filter((rule): rule is string => typeof rule === 'string') : []
}

/** Allow and deny rules from the settings files of `cwd` (project files gated by trust). Unreadable files add none. */
export function projectRules(cwd: string): { allow: Rule[]; deny: Rule[] } {
  let files
  try {
    files = readSettingsFiles(cwd)
  } catch {
    // A bad file was reported where the settings were resolved; it adds no rules here.
    return { allow: [], deny: [] }
  }
  // The model does not matter for rules: only permissions are read from what the gate keeps.
  const gated = gateSettings(files, trustState(cwd), '').files
  return {
    allow: parseRules(gated.flatMap((file) => listOf(file.data.permissions, 'allow'))).rules,
    deny: parseRules(gated.flatMap((file) => listOf(file.data.permissions, 'deny'))).rules,
  }
}
