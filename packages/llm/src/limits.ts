import type { ContentBlock, Message } from '@keel/session/messages'
import { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from './types.ts'

/**
 * The most one reply may stream, text, reasoning and tool arguments together: four times the largest output limit
 * of the catalog's models (128k tokens at ~4 characters each). A server that never ends its reply is cut here
 * instead of growing the process without bound.
 */
export const REPLY_CHAR_LIMIT = 2_000_000
/** Tool calls in one reply; a model that asks for more is looping, and each call is logged and run. */
export const REPLY_TOOL_CALL_LIMIT = 256

/** What a text-only model is sent in place of an image. */
export function imageNote(block: { mediaType: string }, model: string): string {
  return `[an image (${block.mediaType}) was here; ${model} takes no images, so it was left out]`
}

/**
 * Why a prompt that carries images is not sent to `adapter`, in one line, or undefined when the model takes them.
 * Only a model the catalog (or the settings' `models`) says has vision is sent a person's image: a text-only model
 * would answer as if it had seen it. Images already in the history (a `read` of a PNG) get `imageNote` instead.
 */
export function imageRefusal(adapter: Pick<LlmAdapter, 'provider' | 'model' | 'vision'>): string | undefined {
  if (adapter.vision === true) return undefined
  const spec = `${adapter.provider}/${adapter.model}`
  const why = adapter.vision === false ? 'takes no images' : 'is not known to take images'
  return `${spec} ${why} (the model catalog), so nothing was sent; use a vision model, or set "vision": true for it under "models" in settings`
}

function withoutImages(messages: readonly Message[], model: string): Message[] {
  const swap = <T extends ContentBlock>(blocks: readonly T[]): T[] =>
    blocks.map((block) =>
      block.type === 'image' ? ({ type: 'text', text: imageNote(block, model) } as unknown as T) : block,
    )
  return messages.map((message) => {
    if (message.role === 'tool')
      return { ...message, content: message.content.map((result) => ({ ...result, content: swap(result.content) })) }
    return message.content.some((block) => block.type === 'image')
      ? ({ ...message, content: swap(message.content) } as Message)
      : message
  })
}

/**
 * `adapter` bounded: a text-only model (`vision === false`) gets a note for each image; a reply that streams more
 * than REPLY_CHAR_LIMIT characters or REPLY_TOOL_CALL_LIMIT tool calls ends with a one-line error.
 */
export function bounded(adapter: LlmAdapter): LlmAdapter {
  return {
    provider: adapter.provider,
    model: adapter.model,
    contextWindow: adapter.contextWindow,
    price: adapter.price,
    vision: adapter.vision,
    async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
      const sent =
        adapter.vision === false ? { ...request, messages: withoutImages(request.messages, adapter.model) } : request
      let chars = 0
      let calls = 0
      for await (const chunk of adapter.stream(sent, signal)) {
        if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') chars += chunk.text.length
        else if (chunk.type === 'tool-call-delta') chars += chunk.argumentsDelta.length
        else if (chunk.type === 'tool-call-start' && ++calls > REPLY_TOOL_CALL_LIMIT)
          throw new LlmError(
            'server',
            `${adapter.provider}: the reply asked for more than ${REPLY_TOOL_CALL_LIMIT} tool calls; it was ended there`,
          )
        if (chars > REPLY_CHAR_LIMIT)
          throw new LlmError(
            'server',
            `${adapter.provider}: the reply went past ${REPLY_CHAR_LIMIT.toLocaleString('en-US')} characters (text, reasoning and tool arguments); it was ended there`,
          )
        yield chunk
      }
    },
  }
}
