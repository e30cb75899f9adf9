import type { SlashCommand } from '@mariozechner/pi-tui'

/** The slash commands: the table drives `/help`, autocomplete and the parser. */
export const COMMANDS = {
  help: 'Show commands and keys',
  new: 'Start a new session in this directory',
  sessions: 'List the sessions of this directory',
  resume: 'Open another session: /resume <id or unique prefix>',
  plan: 'Show the last plan written in this session, even after a later turn cleared it',
  rewind: 'Go back to an earlier prompt: restore the files, continue in a fork, or both',
  compact: 'Summarise older turns now to free context (applies before the next request)',
  model: 'Switch the model for the following turns: /model <provider>/<model>; alone, list the providers',
  quit: 'Exit Keel (also /exit, Ctrl+D on an empty editor, Ctrl+C twice)',
} as const

type CommandName = keyof typeof COMMANDS

const ALIASES: Record<string, CommandName> = { exit: 'quit', q: 'quit', h: 'help', '?': 'help' }

const KEYS: readonly [string, string][] = [
  ['Enter', 'send (while a turn runs: queue)'],
  ['Shift+Enter / Alt+Enter', 'new line'],
  ['Up / Down', 'prompt history'],
  ['Esc', 'cancel the running turn (kills running commands)'],
  ['Ctrl+C', 'cancel or clear; twice to exit'],
  ['Ctrl+O', 'expand / collapse tool output and reasoning'],
  ['Ctrl+T', 'show the whole plan / collapse it'],
  ['@path, Tab', 'complete a path (.gitignore-aware); Tab or Enter inserts it'],
  ['!command', 'run a command yourself (same permissions and sandbox as bash); the model sees its output'],
  ['y / a / n, Esc', 'at an approval prompt: allow once / always (saves a rule) / deny; other keys are ignored'],
]

export function slashCommands(): SlashCommand[] {
  return Object.entries(COMMANDS).map(([name, description]) => ({ name, description }))
}

export type ParsedCommand = { name: CommandName; arg: string } | { unknown: string }

/** `/name rest…` → the command and its argument text. */
export function parseCommand(text: string): ParsedCommand {
  const match = /^\/(\S*)\s*([\s\S]*)$/.exec(text.trim())
  const word = (match?.[1] ?? '').toLowerCase()
  const name = (word in COMMANDS ? word : ALIASES[word]) as CommandName | undefined
  return name ? { name, arg: (match?.[2] ?? '').trim() } : { unknown: word }
}

export function helpText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2
  const keyWidth = Math.max(...KEYS.map(([key]) => key.length)) + 2
  return [
    'Commands',
    ...Object.entries(COMMANDS).map(([name, description]) => `  /${name.padEnd(width)}${description}`),
    '',
    'Keys',
    ...KEYS.map(([key, what]) => `  ${key.padEnd(keyWidth)}${what}`),
  ].join('\n')
}
