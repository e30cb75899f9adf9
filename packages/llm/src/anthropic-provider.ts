import { AnthropicAdapter } from './anthropic.ts'
import { checkedUrl, contextWindowFor, requireKey, value } from './providers.ts'
import type { ProviderOptions } from './types.ts'

export function createAnthropic(model: string, options: ProviderOptions): AnthropicAdapter {
  const base = value(options.baseUrl) ?? value(options.env.ANTHROPIC_BASE_URL) ?? 'https://api.anthropic.com'
  const authToken = value(options.env.ANTHROPIC_AUTH_TOKEN)
  const apiKey =
    authToken && !value(options.env.ANTHROPIC_API_KEY)
      ? undefined
      : requireKey('anthropic', model, 'ANTHROPIC_API_KEY', options.env)
  return new AnthropicAdapter({
    model,
    baseURL: checkedUrl(base, 'anthropic', model),
    apiKey,
    authToken,
    keyVariable: apiKey ? 'ANTHROPIC_API_KEY' : 'ANTHROPIC_AUTH_TOKEN',
    contextWindow: contextWindowFor(model),
    idleTimeoutMs: options.idleTimeoutMs,
    reasoning: options.reasoning,
  })
}
