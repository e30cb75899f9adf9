import { lastModel, type LlmAdapter } from '@keel/agent'
import { errorLine } from '@keel/session/text'
import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

export const resume: Command = {
  name: 'resume',
  description: 'Open another session: /resume <id or unique prefix>',
  run: async (actions, arg) => {
    if (actions.busy()) return
    if (!arg) return actions.note('warn', 'Usage: /resume <session id or unique prefix> (see /sessions)')
    const matches = actions.ctx.sessions.list(actions.cwd).filter((summary) => summary.id.startsWith(arg))
    const id = matches.length === 1 ? matches[0]!.id : arg
    if (matches.length > 1)
      return actions.note('warn', `${matches.length} sessions start with ${arg}; type more of the id.`)
    if (id === actions.agent.id) return actions.note('info', 'That is the session already open.')
    // The model the session's log records (the one it started on, or its last /model choice); otherwise it continues
    // with the model in use.
    let model: LlmAdapter = actions.agent.model
    let chosen: { spec: string; baseUrl?: string } | undefined
    try {
      chosen = lastModel(actions.ctx.sessions.read(id).events)
    } catch {
      chosen = undefined // an unknown id: agents.resume below says so
    }
    let spec = actions.model.current
    if (chosen && chosen.spec !== spec) {
      try {
        model = await actions.model.make(chosen.spec, chosen.baseUrl)
        spec = chosen.spec
      } catch (error) {
        actions.note(
          'warn',
          `That session used ${escapeLine(chosen.spec)}, which cannot start: ${escapeLine(errorLine(error, 300))}`,
        )
      }
    }
    if (actions.turnRunning()) return void actions.busy()
    const resumed = `Resumed session ${id} on ${escapeLine(spec)}.`
    if (actions.replaceAgent(() => actions.ctx.agents.resume(id, { model, recordModel: { spec } }), resumed))
      actions.model.show(spec)
  },
}
