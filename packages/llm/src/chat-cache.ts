import type { CacheTtl } from './anthropic-cache.ts'
import type { ChatRequest, TextPart } from './openai-wire.ts'

// Claude through OpenRouter: OpenRouter passes `cache_control` on content parts through to Anthropic
// (https://openrouter.ai/docs/features/prompt-caching#anthropic-claude), with Anthropic's rules (at most 4
// breakpoints, see anthropic-cache.ts). The same moving pair as the Messages adapter: the system prompt, and the
// last text part of the latest message. Other OpenRouter models cache by themselves (or not at all).

/** True for a model whose requests get breakpoints: `openrouter` with an `anthropic/…` model. */
export function takesChatBreakpoints(provider: string, model: string): boolean {
  return provider === 'openrouter' && model.startsWith('anthropic/')
}

export function placeChatBreakpoints(body: ChatRequest, ttl: CacheTtl = '5m'): void {
  const control: NonNullable<TextPart['cache_control']> =
    ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' }
  const marked = (text: string): TextPart[] => [{ type: 'text', text, cache_control: control }]
  const first = body.messages[0]
  if (first?.role === 'system' && typeof first.content === 'string' && first.content)
    body.messages[0] = { ...first, content: marked(first.content) }
  const index = body.messages.length - 1
  const last = body.messages[index]
  if (!last || index === 0) return
  if ((last.role === 'user' || last.role === 'tool') && typeof last.content === 'string' && last.content) {
    body.messages[index] = { ...last, content: marked(last.content) }
  } else if (last.role === 'user' && Array.isArray(last.content)) {
    const parts = [...last.content]
    for (let i = parts.length - 1; i >= 0; i--) {
      const part = parts[i]!
      if (part.type !== 'text') continue
      parts[i] = { ...part, cache_control: control }
      body.messages[index] = { ...last, content: parts }
      return
    }
  }
}
