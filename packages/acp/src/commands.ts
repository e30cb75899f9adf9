import type { SessionUpdate } from '@agentclientprotocol/sdk'
import { slashCommandList } from '@keel/door/slash'

/**
 * `available_commands_update`: the command files of a session's folder (@keel/extend's discovery, through
 * @keel/door), so a client lists them; the client sends one as a prompt `/name args`, which the bridge expands as
 * every door does (https://agentclientprotocol.com/protocol/slash-commands).
 */
export function commandsUpdate(cwd: string): SessionUpdate[] {
  const commands = slashCommandList(cwd)
  // None found: nothing to say (a client lists no commands until told of some).
  if (!commands.length) return []
  return [
    {
      sessionUpdate: 'available_commands_update',
      availableCommands: commands.map((command) => ({
        name: command.name,
        description: command.description,
        ...(command.argumentHint ? { input: { hint: command.argumentHint } } : {}),
      })),
    },
  ]
}
