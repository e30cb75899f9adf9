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

/** Per provider, keyed by its name (`openai-compatible`, `deepseek`, …): extra request headers. */
export type ProviderSettings = Record<string, { headers?: Record<string, string> }>

/**
 * `providers` in settings.json (and the llm plugin's config). A gateway such as Portkey routes and authenticates by
 * header (`x-portkey-provider`, `x-portkey-api-key`: https://portkey.ai/docs/api-reference/inference-api/headers);
 * a value may name an environment variable as `${NAME}`, so a secret stays out of the file.
 */
export const ProviderSettingsSchema: Schema<ProviderSettings> = Schema.dict(
  Schema.object({
    headers: Schema.dict(Schema.string()).description(
      'Extra request headers; a value may be ${ENV_VAR}. Not authorization, content-type, accept or the API key headers.',
    ),
  }),
).description('Per provider, keyed by its name: extra request headers (headers).') as Schema<ProviderSettings>

/** What Keel sets itself: a header of the settings must not replace the key, the body's type or the stream. */
const RESERVED_HEADERS = [
  'authorization',
  'x-api-key',
  'api-key',
  'content-type',
  'content-length',
  'accept',
  'host',
  'anthropic-version',
  'openai-organization',
  'openai-project',
]

/** RFC 9110 field name (token); a value must hold no line break or other control character. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** `${NAME}` references in a header value. */
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** Why one header of the settings cannot be sent, or undefined. */
export function headerProblem(
  name: string,
  value: string,
  env: Record<string, string | undefined>,
): string | undefined {
  if (!TOKEN.test(name)) return `${JSON.stringify(name)} is not a valid header name`
  if (RESERVED_HEADERS.includes(name.toLowerCase()))
    return `${name} is set by Keel itself (the API key goes in its environment variable)`
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) return 'holds a line break or control character'
  for (const [, variable] of value.matchAll(REFERENCE))
    if (!env[variable!]?.trim()) return `uses \${${variable}}, which is not set`
  return undefined
}

/** The headers as they are sent: each `${NAME}` replaced by the environment's value. Throws on a problem. */
export function expandHeaders(
  headers: Record<string, string> | undefined,
  env: Record<string, string | undefined>,
  where: string,
): Record<string, string> | undefined {
  if (!headers) return undefined
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    const problem = headerProblem(name, value, env)
    if (problem) throw new Error(`${where}.headers.${name}: ${problem}`)
    out[name] = value.replace(REFERENCE, (_, variable: string) => env[variable]!.trim())
  }
  return out
}
