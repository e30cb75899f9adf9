import type Anthropic from '@anthropic-ai/sdk'

// Prompt-cache breakpoints for the Messages API, following
// https://platform.claude.com/docs/en/build-with-claude/prompt-caching:
// - the cached prefix is rendered tools → system → messages; a `cache_control` block caches everything up to and
//   including it, and a later request reads the longest prefix that is byte-identical to one written before;
// - at most 4 blocks may carry `cache_control` ("A maximum of 4 blocks with cache_control may be provided");
// - `ttl` is "5m" (the default) or "1h", and a longer-lived breakpoint must come before a shorter one.
// The SDK's request type has no top-level (automatic) `cache_control`, so the breakpoints are explicit, as Claude
// Code sets them: the last tool, the system prompt, and the last block of the latest message, which moves with the
// conversation. The tools-and-system prefix is often under a model's minimum cacheable length (1,024–4,096
// tokens), so the moving one is the breakpoint that pays; the previous step's is found again by the lookback.

export type CacheTtl = '5m' | '1h'

type Body = Anthropic.MessageCreateParamsStreaming

/** Marks the breakpoints on `body` in place: 3 of the 4 the API allows, all with the same TTL. */
export function placeCacheBreakpoints(body: Body, ttl: CacheTtl): void {
  const control: Anthropic.CacheControlEphemeral =
    ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' }
  const lastTool = body.tools?.at(-1)
  if (lastTool) body.tools![body.tools!.length - 1] = { ...lastTool, cache_control: control } as Anthropic.ToolUnion
  if (typeof body.system === 'string' && body.system)
    body.system = [{ type: 'text', text: body.system, cache_control: control }]
  const last = body.messages.at(-1)
  if (!last) return
  const content: Anthropic.ContentBlockParam[] =
    typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : [...last.content]
  // Thinking blocks cannot carry cache_control; the latest message is a user turn (text, images, tool results).
  for (let i = content.length - 1; i >= 0; i--) {
    const block = content[i]!
    if (block.type === 'thinking' || block.type === 'redacted_thinking') continue
    content[i] = { ...block, cache_control: control } as Anthropic.ContentBlockParam
    body.messages[body.messages.length - 1] = { ...last, content } as Anthropic.MessageParam
    return
  }
}
