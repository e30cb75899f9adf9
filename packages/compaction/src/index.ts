import type { Context } from 'cordis'
import Schema from 'schemastery'
import { Compaction, type Config as ServiceConfig } from './service.ts'

export * from './types.ts'
export { Compaction } from './service.ts'
export { chooseCut, type Cut } from './cut.ts'
export { estimateContext, type ContextEstimate } from './estimate.ts'
export { planToCarry } from './plan.ts'
export { trimContent, trimNote, trimsOf } from './trim.ts'
export {
  planBlock,
  renderTranscript,
  summaryInstruction,
  summaryRequest,
  summaryText,
  SUMMARY_HEADER,
  SUMMARY_OPENING,
  SUMMARY_SYSTEM,
} from './prompt.ts'

export const name = 'keel-compaction'
export const inject = ['agents', 'tools']

export type Config = ServiceConfig
export const Config: Schema<Config> = Schema.object({
  auto: Schema.boolean()
    .default(true)
    .description('Compact automatically before a request that would pass `threshold` of the context window.'),
  threshold: Schema.number()
    .min(0.1)
    .max(1)
    .default(0.8)
    .description(
      'Share of the context window (estimated tokens of the next request) that triggers automatic compaction.',
    ),
  contextWindow: Schema.natural()
    .default(0)
    .description('Context window in tokens; 0 takes it from the model. Without either, only manual compaction runs.'),
  keepTurns: Schema.natural()
    .min(1)
    .default(2)
    .description('Most recent turns (the running one included) that are never summarised.'),
  maxSummaryTokens: Schema.natural().min(256).default(2000).description('Output limit of the summary request.'),
})

/** `ctx.compaction`, and automatic compaction at every `agent/prepare`. Disposing the plugin removes both. */
export function apply(ctx: Context, config: Config): void {
  ctx.plugin(Compaction, config)
}
