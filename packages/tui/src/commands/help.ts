import type { Command } from './command.ts'

const KEYS: readonly [string, string][] = [
  ['Enter', 'send (while a turn runs: queue)'],
  ['Shift+Enter / Alt+Enter', 'new line'],
  ['Up / Down', 'prompt history'],
  ['Esc', 'cancel the running turn (kills running commands)'],
  ['Ctrl+C', 'cancel or clear; twice to exit'],
  ['Ctrl+O', 'expand / collapse tool output and reasoning'],
  ['Ctrl+T', 'show the whole plan / collapse it'],
  ['Ctrl+P', 'edit the plan with keys: ↑↓ select, a add, r rename, K/J move, x done, d delete, Esc leave'],
  ['@path, Tab', 'complete a path (.gitignore-aware); Tab or Enter inserts it'],
  ['!command', 'run a command yourself (same permissions and sandbox as bash); the model sees its output'],
  ['y / a / n, Esc', 'at an approval prompt: allow once / always (saves a rule) / deny; other keys are ignored'],
]

export const help: Command = {
  name: 'help',
  description: 'Show commands and keys',
  aliases: ['h', '?'],
  run: (actions) => actions.note('info', helpText(actions.commands)),
}

function helpText(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((command) => command.name.length)) + 2
  const keyWidth = Math.max(...KEYS.map(([key]) => key.length)) + 2
  return [
    'Commands',
    ...commands.map((command) => `  /${command.name.padEnd(width)}${command.description}`),
    '',
    'Keys',
    ...KEYS.map(([key, what]) => `  ${key.padEnd(keyWidth)}${what}`),
  ].join('\n')
}
