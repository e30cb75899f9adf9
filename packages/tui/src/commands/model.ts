import type { LlmAdapter } from '@keel/agent'
import { errorLine } from '@keel/session/text'
import { modelList, parseModelArg } from '../model-switch.ts'
import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

/** Lists the providers, or switches the open agent's model for the following turns (`session/model`). */
export const model: Command = {
  name: 'model',
  description: 'Switch the model for the following turns: /model <provider>/<model>; alone, list the providers',
  run: async (actions, arg) => {
    if (actions.busy()) return
    const providers = actions.ctx.get('llm')?.providerNames() ?? []
    const current = actions.model.current
    const parsed = parseModelArg(arg, providers)
    if (parsed.kind === 'list') return actions.note('info', modelList(providers, current, actions.model.configured))
    if (parsed.kind === 'invalid') return actions.note('warn', parsed.message)
    if (parsed.spec === current) return actions.note('info', `Already using ${escapeLine(current)}.`)
    const cannot = (error: unknown) =>
      actions.note('error', `Cannot switch to ${escapeLine(parsed.spec)}: ${escapeLine(errorLine(error, 300))}`)
    let adapter: LlmAdapter
    try {
      adapter = await actions.model.make(parsed.spec)
    } catch (error) {
      return cannot(error)
    }
    // A prompt sent while the adapter was being made started a turn: that turn keeps its model.
    if (actions.busy()) return
    try {
      actions.agent.switchModel(adapter, parsed.spec)
    } catch (error) {
      return cannot(error)
    }
    actions.model.show(parsed.spec)
    actions.note('info', `Model: ${escapeLine(parsed.spec)} from the next turn on.`)
  },
  // Typing `/model ` offers the providers (and the model in use) as its argument.
  complete: (actions, prefix) => {
    const providers = actions.ctx.get('llm')?.providerNames() ?? []
    return [actions.model.current, ...providers.map((name) => `${name}/`)]
      .filter((value, i, all) => all.indexOf(value) === i && value.startsWith(prefix.trim()))
      .map((value) => ({ value, label: escapeLine(value) }))
  },
}
