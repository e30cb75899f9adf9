import type { LlmAdapter, ProviderOptions, ProviderRegistry, ReasoningSettings } from './types.ts'
import { bounded } from './limits.ts'

export { CURRENT_MODELS, retiredModel } from './provider-checks.ts'

/** The OpenAI-compatible flavours (see openai-provider.ts); `anthropic` speaks the Messages API. */
const OPENAI_PROVIDERS = ['deepseek', 'openai', 'openrouter', 'openai-compatible'] as const

const REASONING_KEYS = ['thinking', 'reasoningEffort', 'sendReasoning', 'api'] as const

/**
 * How `spec` thinks: its entry of the settings' `models` (which also holds catalog overrides, left out here), with
 * what the command line says (`--effort`) over it.
 */
export function reasoningFor(
  models: Record<string, ReasoningSettings> | undefined,
  spec: string,
  over?: ReasoningSettings,
): ReasoningSettings | undefined {
  const merged: Record<string, unknown> = {}
  for (const source of [models?.[spec], over])
    for (const key of REASONING_KEYS) if (source?.[key] !== undefined) merged[key] = source[key]
  return Object.keys(merged).length ? (merged as ReasoningSettings) : undefined
}

export { REASONING_EFFORTS } from './types.ts'

/** `provider/model` split at its first slash, or undefined when either side is empty. */
export function splitSpec(spec: string): { provider: string; model: string } | undefined {
  const slash = spec.indexOf('/')
  if (slash <= 0 || slash === spec.length - 1) return undefined
  return { provider: spec.slice(0, slash), model: spec.slice(slash + 1) }
}

/** Providers backed by real APIs. */
export const PROVIDER_NAMES = [...OPENAI_PROVIDERS, 'anthropic'] as const

/**
 * One adapter of a real provider: anthropic (Messages) or an OpenAI-compatible flavour (chat completions), bounded
 * (limits.ts). Each SDK (and the model catalog) is imported here, when its first model is created, so a start-up
 * never parses an SDK it does not use. An `openai-compatible` server is asked for its context length
 * (server-models.ts) unless the settings name one.
 */
export async function createProvider(provider: string, model: string, options: ProviderOptions): Promise<LlmAdapter> {
  if (provider === 'anthropic')
    return bounded((await import('./anthropic-provider.ts')).createAnthropic(model, options))
  // OpenAI's own API speaks Responses (codex models speak nothing else); chat completions stays behind `api: chat`.
  if (provider === 'openai' && options.reasoning?.api !== 'chat')
    return bounded((await import('./responses.ts')).createResponses(model, options))
  const { createOpenAiCompatible } = await import('./openai-provider.ts')
  const adapter = createOpenAiCompatible(provider, model, options)
  if (provider !== 'openai-compatible' || options.models?.[`${provider}/${model}`]?.contextWindow)
    return bounded(adapter)
  const { serverContextWindow } = await import('./server-models.ts')
  const window = await serverContextWindow(adapter.options.baseURL, model, adapter.options.apiKey, options.headers)
  return bounded(window ? createOpenAiCompatible(provider, model, options, window) : adapter)
}

/** The real providers: deepseek, openai, openrouter, openai-compatible (chat completions) and anthropic (Messages). */
export function registerProviders(llm: ProviderRegistry): void {
  for (const provider of PROVIDER_NAMES)
    llm.register(provider, (model, options) => createProvider(provider, model, options))
}
