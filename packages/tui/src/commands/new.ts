import type { Command } from './command.ts'

export const newSession: Command = {
  name: 'new',
  description: 'Start a new session in this directory',
  run: (actions) => {
    if (actions.busy()) return
    const model = actions.agent.model
    const spec = actions.model.current
    actions.replaceAgent(() => {
      const agent = actions.ctx.agents.create({ cwd: actions.cwd, model, recordModel: { spec } })
      // A model switched to earlier in this run carries over, and is recorded so reopening the session keeps it.
      if (spec !== actions.model.configured) agent.switchModel(model, spec)
      return { agent, repairs: [] }
    }, 'Started a new session.')
  },
}
