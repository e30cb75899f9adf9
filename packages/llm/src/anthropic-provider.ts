import { AnthropicAdapter } from './anthropic.ts'
import { modelInfo, priceForTtl } from './catalog.ts'
import { checkedUrl, requireKey, value } from './provider-checks.ts'
import type { ProviderOptions } from './types.ts'

export function createAnthropic(model: string, options: ProviderOptions): AnthropicAdapter {
  const base = value(options.baseUrl) ?? value(options.env.ANTHROPIC_BASE_URL) ?? 'https://api.anthropic.com'
  const authToken = value(options.env.ANTHROPIC_AUTH_TOKEN)
  const apiKey =
    authToken && !value(options.env.ANTHROPIC_API_KEY)
      ? undefined
      : requireKey('anthropic', model, 'ANTHROPIC_API_KEY', options.env)
  const info = modelInfo('anthropic', model, options.models)
  const cacheTtl = options.promptCacheTtl ?? '5m'
  return new AnthropicAdapter({
    model,
    baseURL: checkedUrl(base, 'anthropic', model),
    apiKey,
    authToken,
    keyVariable: apiKey ? 'ANTHROPIC_API_KEY' : 'ANTHROPIC_AUTH_TOKEN',
    contextWindow: info.contextWindow,
    // modelInfo always gives Claude an output limit; the fallback is for a type that cannot see that.
    maxOutput: info.maxOutput ?? 32_000,
    price: priceForTtl(info.price, cacheTtl),
    vision: info.vision,
    cacheTtl,
    idleTimeoutMs: options.idleTimeoutMs,
    reasoning: options.reasoning,
    headers: options.headers,
    ...(options.tell ? { tell: options.tell } : {}),
  })
}
