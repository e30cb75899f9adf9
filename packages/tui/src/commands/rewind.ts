import { openRewindPicker } from '../rewind-picker.ts'
import type { Command } from './command.ts'

export const rewind: Command = {
  name: 'rewind',
  description: 'Go back to an earlier prompt: restore the files, continue in a fork, or both',
  run: (actions) => {
    if (actions.busy()) return
    openRewindPicker({
      ctx: actions.ctx,
      tui: actions.tui,
      session: actions.agent.session,
      note: (level, text) => actions.note(level, text),
      continueIn: (fork, message, draft) => {
        actions.replaceAgent(() => actions.ctx.agents.resume(fork, { model: actions.agent.model }), message)
        if (actions.agent.id === fork) actions.setDraft(draft)
      },
    })
  },
}
