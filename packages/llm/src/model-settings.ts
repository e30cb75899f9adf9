import Schema from 'schemastery'
import type { ModelOverrides } from './catalog.ts'

const price = Schema.object({
  input: Schema.number().min(0),
  output: Schema.number().min(0),
  cacheRead: Schema.number().min(0),
  cacheWrite: Schema.number().min(0),
})

/**
 * `models` in settings.json (and the llm plugin's config): per-model overrides of the catalog, keyed
 * `"<provider>/<model>"`; prices in US dollars per million tokens.
 */
export const ModelOverridesSchema: Schema<ModelOverrides> = Schema.dict(
  Schema.object({
    contextWindow: Schema.natural().min(1),
    maxOutput: Schema.natural().min(1),
    vision: Schema.boolean(),
    toolCalls: Schema.boolean(),
    reasoning: Schema.boolean(),
    price,
  }),
).description('Per-model overrides of the catalog, keyed "<provider>/<model>".') as Schema<ModelOverrides>
