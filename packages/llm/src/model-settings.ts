import Schema from 'schemastery'
import type { ModelOverrides } from './catalog.ts'
import { REASONING_EFFORTS, type ReasoningSettings } from './types.ts'

/** One model's settings: catalog overrides (context window, output, vision, price) and how it thinks. */
export type ModelSettings = Record<string, ModelOverrides[string] & ReasoningSettings>

const price = Schema.object({
  input: Schema.number().min(0),
  output: Schema.number().min(0),
  cacheRead: Schema.number().min(0),
  cacheWrite: Schema.number().min(0),
})

/**
 * `models` in settings.json (and the llm plugin's config), keyed `"<provider>/<model>"`: overrides of the catalog
 * (prices in US dollars per million tokens) and how the model thinks (`--effort` sets `reasoningEffort` here).
 */
export const ModelSettingsSchema: Schema<ModelSettings> = Schema.dict(
  Schema.object({
    contextWindow: Schema.natural().min(1),
    maxOutput: Schema.natural().min(1),
    vision: Schema.boolean(),
    toolCalls: Schema.boolean(),
    reasoning: Schema.boolean(),
    price,
    thinking: Schema.union([
      Schema.const('on' as const),
      Schema.const('off' as const),
      Schema.natural().min(1024),
    ]).description('on, off, or a budget in tokens (Anthropic, OpenRouter; at least 1024).'),
    reasoningEffort: Schema.union(REASONING_EFFORTS).description(
      "The provider's effort level; each provider maps the ones it has (DeepSeek: low, high, max).",
    ),
    sendReasoning: Schema.boolean().description(
      'Chat completions: send reasoning_content back on assistant messages (default on; off for a server that rejects it).',
    ),
    api: Schema.union(['responses', 'chat'] as const).description(
      'openai only: chat speaks chat completions instead of the Responses API.',
    ),
  }),
).description(
  'Per model, keyed "<provider>/<model>": catalog overrides (contextWindow, maxOutput, vision, price) and thinking, reasoningEffort, sendReasoning, api.',
) as Schema<ModelSettings>
