// The rules of the project a call runs in, read for the call's own cwd. One process can serve sessions in many
// folders (keel acp, serve --all), and each folder's deny rules must hold for its sessions; its allow rules count
// only once the person trusted the folder (@keel/settings' trust gate).
import { gateSettings, type SettingsSnapshot, settingsSnapshot } from '@keel/settings'
import { parseRules, type Rule } from './rules.ts'

function listOf(value: unknown, key: 'allow' | 'deny'): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return []
  const list = (value as Record<string, unknown>)[key]
  return Array.isArray(list) ? list.filter((rule): rule is string => typeof rule === 'string') : []
}

/** The rules of one settings snapshot: the same while the snapshot is (settings' snapshot.ts re-reads on a change). */
const parsed = new WeakMap<SettingsSnapshot, { allow: Rule[]; deny: Rule[] }>()

/** Allow and deny rules from the settings files of `cwd` (project files gated by trust). Unreadable files add none. */
export function projectRules(cwd: string): { allow: Rule[]; deny: Rule[] } {
  const snapshot = settingsSnapshot(cwd)
  let rules = parsed.get(snapshot)
  if (!rules) {
    // A bad file (snapshot.error) was reported where the settings were resolved; it adds no rules here. The model
    // does not matter for rules: only permissions are read from what the gate keeps.
    const gated = gateSettings(snapshot.files, snapshot.trust, '').files
    rules = {
      allow: parseRules(gated.flatMap((file) => listOf(file.data.permissions, 'allow'))).rules,
      deny: parseRules(gated.flatMap((file) => listOf(file.data.permissions, 'deny'))).rules,
    }
    parsed.set(snapshot, rules)
  }
  return rules
}
