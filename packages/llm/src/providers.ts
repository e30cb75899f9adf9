import type { LlmAdapter } from './types.ts'
import type { LlmService, ProviderOptions } from './index.ts'
import { bounded } from './limits.ts'
import { LlmError } from './types.ts'

export function value(text: string | undefined): string | undefined {
  const trimmed = text?.trim()
  return trimmed ? trimmed : undefined
}

export function requireKey(provider: string, model: string, variable: string, env: ProviderOptions['env']): string {
  const key = value(env[variable])
  if (!key) throw new LlmError('config', `${variable} is not set (needed for --model ${provider}/${model})`)
  return key
}

export function checkedUrl(url: string, provider: string, model: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http')
  } catch {
    throw new LlmError(
      'config',
      `--base-url ${JSON.stringify(url)} is not an http(s) URL (for --model ${provider}/${model})`,
    )
  }
  return url.replace(/\/+$/, '')
}

/** The OpenAI-compatible flavours (see openai-provider.ts); `anthropic` speaks the Messages API. */
const OPENAI_PROVIDERS = ['deepseek', 'openai', 'openrouter', 'openai-compatible'] as const

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
  const { createOpenAiCompatible } = await import('./openai-provider.ts')
  const adapter = createOpenAiCompatible(provider, model, options)
  if (provider !== 'openai-compatible' || options.models?.[`${provider}/${model}`]?.contextWindow)
    return bounded(adapter)
  const { serverContextWindow } = await import('./server-models.ts')
  const window = await serverContextWindow(adapter.options.baseURL, model, adapter.options.apiKey)
  return bounded(window ? createOpenAiCompatible(provider, model, options, window) : adapter)
}

/** The real providers: deepseek, openai, openrouter, openai-compatible (chat completions) and anthropic (Messages). */
export function registerProviders(llm: LlmService): void {
  for (const provider of PROVIDER_NAMES)
    llm.register(provider, (model, options) => createProvider(provider, model, options))
}
