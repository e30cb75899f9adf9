import { expandSlash, slashCommandList } from '@keel/door/slash'
import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

/**
 * The project's and the person's slash command files (@keel/extend, through @keel/door's one expansion) as commands:
 * each expands its file and sends the result as the prompt, with the command named on the log.
 */
export function fileCommands(cwd: string, builtins: readonly Command[]): Command[] {
  const taken = new Set(builtins.flatMap((command) => [command.name, ...(command.aliases ?? [])]))
  return slashCommandList(cwd)
    .filter((command) => !taken.has(command.name))
    .map((command) => ({
      name: command.name,
      description: `${command.description}${command.argumentHint ? ` ${command.argumentHint}` : ''}`,
      run: async (actions, arg) => {
        if (actions.busy()) return
        const warnings: string[] = []
        const slash = await expandSlash(actions.ctx, actions.agent, `/${command.name} ${arg}`, false, (line) =>
          warnings.push(line),
        )
        for (const line of warnings) actions.note('warn', escapeLine(line.replace(/^keel: /, '')))
        actions.prompt(slash.text, {
          ...(slash.command ? { command: slash.command } : {}),
          ...(slash.model ? { model: slash.model } : {}),
        })
      },
    }))
}
