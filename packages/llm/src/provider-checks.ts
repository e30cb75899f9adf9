// What every provider's factory checks of its options before it makes an adapter: the model id, the key, the URL.
// Apart from providers.ts, which loads the factories, so a factory importing these does not import its loader.
import { LlmError, type ProviderOptions } from './types.ts'

/**
 * The ids each provider offers today: what `/model` lists and what a retired id points to. Unknown ids still work.
 * DeepSeek: https://api-docs.deepseek.com/quick_start/pricing (`deepseek-chat`, `deepseek-reasoner` retired
 * 2026-07-24); OpenAI: https://developers.openai.com/codex/models; Anthropic:
 * https://platform.claude.com/docs/en/about-claude/models/overview.
 */
export const CURRENT_MODELS: Record<string, readonly string[]> = {
  deepseek: ['deepseek-v4-flash', 'deepseek-v4-pro', 'deepseek-flash'],
  openai: ['gpt-5.5', 'gpt-5.4', 'gpt-5.4-mini', 'gpt-5.3-codex'],
  anthropic: ['claude-opus-5', 'claude-sonnet-5', 'claude-haiku-4-5'],
  openrouter: ['deepseek/deepseek-v4-flash', 'anthropic/claude-sonnet-5', 'openai/gpt-5.5'],
}

const RETIRED_MODELS: Record<string, Record<string, string>> = {
  deepseek: { 'deepseek-chat': '2026-07-24', 'deepseek-reasoner': '2026-07-24' },
}

/** A retired id fails here, before any request, in one line naming the ids to use instead. */
export function retiredModel(provider: string, model: string): void {
  const since = RETIRED_MODELS[provider]?.[model]
  if (!since) return
  const current = (CURRENT_MODELS[provider] ?? []).map((id) => `${provider}/${id}`).join(' or ')
  throw new LlmError('config', `${provider}/${model} was retired on ${since}; use ${current}`)
}

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
