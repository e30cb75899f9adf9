import type { Context } from 'cordis'
import Schema from 'schemastery'
import { todosProjection } from './plan.ts'
import { todoWriteTool } from './tool.ts'
import { snapshotProblem } from './validate.ts'

export * from './types.ts'
export * from './plan.ts'
export * from './plan-file.ts'
export * from './validate.ts'
export * from './describe.ts'
export * from './render.ts'
export { todoWriteTool, TodoParameters } from './tool.ts'

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
 * `todo_write`, the `todos` projection (when `ctx.projections` is mounted) and the snapshot invariant (when
 * `ctx.invariants` is mounted). Registrations are effects of this plugin: disposing it removes all three.
 */
export function apply(ctx: Context, config: Config): void {
  ctx.tools.register(todoWriteTool({ allowParallelInProgress: config.allowParallelInProgress }))
  ctx.inject(['projections'], (ctx) => {
    ctx.projections.register(todosProjection)
  })
  ctx.inject(['invariants'], (ctx) => {
    ctx.invariants.register('todo/write', (event) =>
      event.type === 'todo/write' ? snapshotProblem(event.data) : undefined,
    )
  })
}
