import { type LlmAdapter, openForResume } from '@keel/agent'
import { errorLine } from '@keel/session/text'
import { escapeLine } from '../safe.ts'
import type { Command, CommandActions } from './command.ts'
import { openResumePicker } from '../resume-picker.ts'

export const resume: Command = {
  name: 'resume',
  description: 'Open another session: /resume picks from a list, /resume <id or unique prefix> opens one',
  run: async (actions, arg) => {
    if (actions.busy()) return
    if (!arg)
      return openResumePicker({
        ctx: actions.ctx,
        tui: actions.tui,
        cwd: actions.cwd,
        current: actions.agent.id,
        note: (level, text) => actions.note(level, text),
        open: (id) =>
          void resumeId(actions, id).catch((error) =>
            actions.note('error', `/resume failed: ${escapeLine(errorLine(error, 300))}`),
          ),
      })
    await resumeId(actions, arg)
  },
}

/** Opens the session `arg` names (a whole id or a unique prefix), on the model its log records. */
async function resumeId(actions: CommandActions, arg: string): Promise<void> {
  const matches = actions.ctx.sessions.list(actions.cwd).filter((summary) => summary.id.startsWith(arg))
  const id = matches.length === 1 ? matches[0]!.id : arg
  if (matches.length > 1)
    return actions.note('warn', `${matches.length} sessions start with ${arg}; type more of the id.`)
  if (id === actions.agent.id) return actions.note('info', 'That is the session already open.')
  // The model the session's log records (the one it started on, or its last /model choice), read from the session
  // the resume below takes over (`openForResume`); otherwise it continues with the model in use.
  let model: LlmAdapter = actions.agent.model
  let resuming: ReturnType<typeof openForResume> | undefined
  try {
    resuming = openForResume(actions.ctx.sessions, id)
  } catch {
    resuming = undefined // an unknown or locked id: agents.resume below says so
  }
  const chosen = resuming?.recorded
  const release = () => resuming?.release()
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
  if (actions.turnRunning()) {
    release()
    return void actions.busy()
  }
  const resumed = `Resumed session ${id} on ${escapeLine(spec)}.`
  const make = () => {
    const next = actions.ctx.agents.resume(id, { model, recordModel: { spec } })
    return { agent: next.agent, repairs: [...(resuming?.opened.repairs ?? []), ...next.repairs] }
  }
  if (actions.replaceAgent(make, resumed)) actions.model.show(spec)
  else release()
}
