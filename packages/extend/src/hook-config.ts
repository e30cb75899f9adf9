import { readFileSync } from 'node:fs'

// The `hooks` key of a settings file, in claude-code's shape (https://docs.claude.com/en/docs/claude-code/hooks):
// `{ "<Event>": [ { "matcher": "Bash|Edit", "hooks": [ { "type": "command", "command": "…", "timeout": 60 } ] } ] }`.

export const HOOK_EVENTS = [
  'PreToolUse',
  'PostToolUse',
  'UserPromptSubmit',
  'Stop',
  'SubagentStop',
  'SessionStart',
  'SessionEnd',
  'PreCompact',
  'Notification',
] as const
export type HookEvent = (typeof HOOK_EVENTS)[number]

export interface HookCommand {
  event: HookEvent
  /** The matcher as written ('' matches everything). */
  matcher: string
  /** Compiled anchored, as claude-code reads it: `Edit|Write`, `Notebook.*`, `*`. */
  pattern: RegExp
  command: string
  /** Seconds before the command is killed. */
  timeout: number
  /** The settings file it came from. */
  file: string
}

/** claude-code's default: a hook that gives no answer in 60 s is killed. */
const DEFAULT_TIMEOUT = 60
const MAX_TIMEOUT = 600

/** A settings file's `hooks`, as @keel/extend's plugin config carries it. */
export interface HookFile {
  path: string
  hooks: unknown
}

/** The line of `file` where `needle` first appears (1 when the file cannot be read): warnings name it. */
function lineOf(file: string, needle: string): number {
  try {
    const index = readFileSync(file, 'utf8').indexOf(needle)
    return index < 0 ? 1 : readFileSync(file, 'utf8').slice(0, index).split('\n').length
  } catch {
    return 1
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}

/** Every command hook of the files, in order; a bad entry is one warning naming its file and line, the rest loads. */
export function parseHooks(files: readonly HookFile[]): { hooks: HookCommand[]; warnings: string[] } {
  const hooks: HookCommand[] = []
  const warnings: string[] = []
  for (const { path, hooks: value } of files) {
    const warn = (needle: string, text: string) => warnings.push(`${path}:${lineOf(path, needle)}: ${text}`)
    if (!isObject(value)) {
      warn('"hooks"', 'hooks must be an object of event names')
      continue
    }
    for (const [event, groups] of Object.entries(value)) {
      if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
        warn(`"${event}"`, `unknown hook event ${JSON.stringify(event)}, skipped; known: ${HOOK_EVENTS.join(', ')}`)
        continue
      }
      if (!Array.isArray(groups)) {
        warn(`"${event}"`, `hooks.${event} must be a list of { matcher, hooks }`)
        continue
      }
      for (const group of groups) {
        if (!isObject(group) || !Array.isArray(group.hooks)) {
          warn(`"${event}"`, `hooks.${event}: an entry without a "hooks" list, skipped`)
          continue
        }
        const matcher = typeof group.matcher === 'string' ? group.matcher : ''
        let pattern: RegExp
        try {
          pattern = matcher === '' || matcher === '*' ? /^/ : new RegExp(`^(?:${matcher})$`)
        } catch {
          warn(
            matcher || `"${event}"`,
            `hooks.${event}: matcher ${JSON.stringify(matcher)} is not a valid pattern, skipped`,
          )
          continue
        }
        for (const hook of group.hooks) {
          if (!isObject(hook) || hook.type !== 'command' || typeof hook.command !== 'string' || !hook.command.trim()) {
            warn(`"${event}"`, `hooks.${event}: only { "type": "command", "command": "…" } hooks run here, skipped one`)
            continue
          }
          const timeout =
            typeof hook.timeout === 'number' && hook.timeout > 0 ? Math.min(hook.timeout, MAX_TIMEOUT) : DEFAULT_TIMEOUT
          hooks.push({ event: event as HookEvent, matcher, pattern, command: hook.command, timeout, file: path })
        }
      }
    }
  }
  return { hooks, warnings }
}
