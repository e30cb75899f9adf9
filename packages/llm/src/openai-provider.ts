import { OpenAiAdapter, type OpenAiAdapterOptions } from './openai.ts'
import { modelInfo, OPENAI_COMPATIBLE_DEFAULT_WINDOW, priceForTtl } from './catalog.ts'
import { takesChatBreakpoints } from './chat-cache.ts'
import { checkedUrl, requireKey, retiredModel, value } from './provider-checks.ts'
import type { ProviderOptions } from './types.ts'
import { LlmError } from './types.ts'

interface OpenAiFlavor {
  /** Default base URL; undefined means --base-url is required. */
  baseURL?: string
  /** Environment variable that overrides the default base URL. */
  baseUrlVariable?: string
  keyVariable: string
  keyRequired: boolean
  extra?: (env: ProviderOptions['env']) => Partial<OpenAiAdapterOptions>
}

const OPENAI_FLAVORS: Record<string, OpenAiFlavor> = {
  deepseek: { baseURL: 'https://api.deepseek.com', keyVariable: 'DEEPSEEK_API_KEY', keyRequired: true },
  openai: {
    baseURL: 'https://api.openai.com/v1',
    baseUrlVariable: 'OPENAI_BASE_URL',
    keyVariable: 'OPENAI_API_KEY',
    keyRequired: true,
    extra: (env) => ({
      maxTokensField: 'max_completion_tokens',
      organization: value(env.OPENAI_ORG_ID),
      project: value(env.OPENAI_PROJECT_ID),
    }),
  },
  openrouter: {
    baseURL: 'https://openrouter.ai/api/v1',
    keyVariable: 'OPENROUTER_API_KEY',
    keyRequired: true,
    extra: () => ({ headers: { 'X-Title': 'Keel' } }),
  },
  'openai-compatible': { keyVariable: 'KEEL_API_KEY', keyRequired: false },
}

/**
 * `serverWindow`: the context length the server itself reported (server-models.ts), for `openai-compatible`. The
 * settings' override wins over it; with neither, OPENAI_COMPATIBLE_DEFAULT_WINDOW.
 */
export function createOpenAiCompatible(
  provider: string,
  model: string,
  options: ProviderOptions,
  serverWindow?: number,
): OpenAiAdapter {
  const flavor = OPENAI_FLAVORS[provider]
  retiredModel(provider, model)
  if (!flavor) throw new LlmError('config', `unknown OpenAI-compatible provider ${JSON.stringify(provider)}`)
  const base =
    value(options.baseUrl) ??
    (flavor.baseUrlVariable ? value(options.env[flavor.baseUrlVariable]) : undefined) ??
    flavor.baseURL
  if (!base)
    throw new LlmError(
      'config',
      `--base-url is required for --model ${provider}/${model} (for example http://localhost:11434/v1 for Ollama)`,
    )
  const info = modelInfo(provider, model, options.models)
  const extra = flavor.extra?.(options.env)
  return new OpenAiAdapter({
    provider,
    model,
    baseURL: checkedUrl(base, provider, model),
    apiKey: flavor.keyRequired
      ? requireKey(provider, model, flavor.keyVariable, options.env)
      : value(options.env[flavor.keyVariable]),
    keyVariable: flavor.keyVariable,
    contextWindow:
      info.contextWindow ??
      (provider === 'openai-compatible' ? (serverWindow ?? OPENAI_COMPATIBLE_DEFAULT_WINDOW) : undefined),
    maxOutput: info.maxOutput,
    price: takesChatBreakpoints(provider, model) ? priceForTtl(info.price, options.promptCacheTtl ?? '5m') : info.price,
    vision: info.vision ?? false,
    cacheTtl: options.promptCacheTtl,
    idleTimeoutMs: options.idleTimeoutMs,
    reasoning: options.reasoning,
    ...extra,
    headers: { ...extra?.headers, ...options.headers },
    ...(options.tell ? { tell: options.tell } : {}),
  })
}
