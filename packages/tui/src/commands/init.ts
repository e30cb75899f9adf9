import { INIT_COMMAND, initQuestion, initRun } from '@keel/door/init'
import { confirm } from '../confirm.ts'
import type { Command } from './command.ts'

/** The built-in `/init` (@keel/door/init): a prompt to write AGENTS.md; asks first when one exists. */
export const init: Command = {
  ...INIT_COMMAND,
  run: async (actions) => {
    if (actions.busy()) return
    const run = initRun(actions.cwd)
    if (run.exists && !(await confirm(actions.tui, initQuestion(run), 'Yes, improve it'))) {
      actions.note('info', 'AGENTS.md left as it is.')
      return
    }
    actions.prompt(run.prompt, { command: INIT_COMMAND.name })
  },
}
