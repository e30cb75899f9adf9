import type { SlashCommand } from '@mariozechner/pi-tui'
import { closest } from '@keel/session'
import type { Command, CommandActions } from './command.ts'
import { compact } from './compact.ts'
import { exportCommand } from './export.ts'
import { help } from './help.ts'
import { init } from './init.ts'
import { jobs } from './jobs.ts'
import { model } from './model.ts'
import { newSession } from './new.ts'
import { plan } from './plan.ts'
import { quit } from './quit.ts'
import { resume } from './resume.ts'
import { rewind } from './rewind.ts'
import { sessions } from './sessions.ts'
import { skills } from './skills.ts'

/** The slash commands, in `/help` order: a new one is its module and one line here. */
export const COMMANDS: readonly Command[] = [
  help,
  newSession,
  sessions,
  resume,
  plan,
  rewind,
  compact,
  model,
  init,
  jobs,
  skills,
  exportCommand,
  quit,
]

export type ParsedCommand = { command: Command; arg: string } | { unknown: string; suggestion?: string }

/** `/name rest…` → the command (by name or alias) and its argument text, or the closest name to an unknown one. */
export function parseCommand(commands: readonly Command[], text: string): ParsedCommand {
  const match = /^\/(\S*)\s*([\s\S]*)$/.exec(text.trim())
  const word = (match?.[1] ?? '').toLowerCase()
  const command =
    commands.find((candidate) => candidate.name === word) ??
    commands.find((candidate) => candidate.aliases?.includes(word))
  if (command) return { command, arg: (match?.[2] ?? '').trim() }
  const suggestion = word
    ? closest(
        word,
        commands.map((candidate) => candidate.name),
      )
    : undefined
  return suggestion ? { unknown: word, suggestion } : { unknown: word }
}

/** The commands as the editor's autocomplete offers them, with their argument completions. */
export function slashCommands(commands: readonly Command[], actions: CommandActions): SlashCommand[] {
  return commands.map(({ name, description, complete }) => ({
    name,
    description,
    ...(complete ? { getArgumentCompletions: (prefix: string) => complete(actions, prefix) } : {}),
  }))
}
