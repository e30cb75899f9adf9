import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@keel/permissions' // ctx.permissions
import { todosProjection } from './plan.ts'
import { proposePlanTool } from './propose.ts'
import { PlanService } from './service.ts'
import { todoWriteTool } from './tool.ts'
import { snapshotProblem } from './validate.ts'

export * from './types.ts'
export * from './plan.ts'
export * from './plan-file.ts'
export * from './validate.ts'
export * from './describe.ts'
export * from './render.ts'
export { todoWriteTool, TodoParameters } from './tool.ts'
export { proposePlanTool, ProposeParameters, PROPOSED } from './propose.ts'
export { PlanService, type Refusal } from './service.ts'
export { PLAN_USAGE, parsePlanWords } from './words.ts'
export { planSocketPath, sendPlanRequest, type PlanReply, type PlanRequest } from './remote.ts'

declare module 'cordis' {
  interface Context {
    plans: PlanService
  }
}

export const name = 'keel-todo'
export const inject = ['tools']

export interface Config {
  allowParallelInProgress: boolean
}

export const Config: Schema<Config> = Schema.object({
  allowParallelInProgress: Schema.boolean()
    .default(false)
    .description(
      'Accept several in_progress tasks (for agents that fan out to parallel subagents). The tool description follows this setting.',
    ),
})

/**
 * `todo_write`, `propose_plan`, `ctx.plans` (the person's edits and answers, and what the model is told about them),
 * the `todos` projection (when `ctx.projections` is mounted) and the snapshot invariant (when `ctx.invariants` is
 * mounted). Registrations are effects of this plugin: disposing it removes them all.
 */
export function apply(ctx: Context, config: Config): void {
  const policy = { allowParallelInProgress: config.allowParallelInProgress }
  ctx.tools.register(todoWriteTool(policy))
  ctx.tools.register(proposePlanTool(policy, () => ctx.get('permissions')?.mode))
  ctx.plugin(PlanService, policy)
  ctx.inject(['projections'], (ctx) => {
    ctx.projections.register(todosProjection)
  })
  ctx.inject(['invariants'], (ctx) => {
    ctx.invariants.register('todo/write', (event, trace) => {
      if (event.type !== 'todo/write') return undefined
      // The person writes whenever they like (ctx.plans lets the type stand between turns); the model, in a turn.
      if (event.data.source !== 'user' && trace.openTurn === undefined)
        return 'a model todo/write outside an open turn (only the person writes the plan between turns)'
      return snapshotProblem(event.data)
    })
  })
}
