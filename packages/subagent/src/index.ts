import type { Context } from 'cordis'
import Schema from 'schemastery'
import { SubagentService, type SubagentConfig } from './service.ts'

export * from './plans.ts'
export * from './describe.ts'
export { Slots } from './slots.ts'
export { SubagentService, TaskParameters, type SubagentConfig, type SubagentPlansListener } from './service.ts'

export const name = 'keel-subagent'
export const inject = ['tools', 'agents', 'sessions', 'projections', 'llm']

export interface Config extends SubagentConfig {}

export const Config: Schema<Config> = Schema.object({
  maxDepth: Schema.natural()
    .min(1)
    .default(1)
    .description(
      'How deep subagents may nest. 1: the top-level agent may delegate, its subagents may not (they are not offered `task`).',
    ),
  maxConcurrent: Schema.natural()
    .min(1)
    .default(4)
    .description('Subagents one agent runs at once; further `task` calls of the same agent wait for a free slot.'),
  model: Schema.string().description(
    "Model for subagents as <provider>/<model>. Default: the calling agent's own model.",
  ),
})

/**
 * The `task` tool, the `subagentPlans` projection and `ctx.subagents`. All are effects of this plugin: disposing it
 * removes the tool and the projection and cancels any running child.
 */
export function apply(ctx: Context, config: Config): void {
  ctx.plugin(SubagentService, config)
}
