import type { Command } from './command.ts'

export const quit: Command = {
  name: 'quit',
  description: 'Exit Keel (also /exit, Ctrl+D on an empty editor, Ctrl+C twice)',
  aliases: ['exit', 'q'],
  run: (actions) => {
    void actions.quit()
  },
}
