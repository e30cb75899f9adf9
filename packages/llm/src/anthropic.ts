import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk'
import { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch } from './idle.ts'
import { causeText, providerError, type FailureContext } from './errors.ts'
import { serverWaitMs } from './retries.ts'
import { type Tell, tellLeftOut } from './left-out.ts'
import type { ImageBlock, Message, TokenUsage } from '@keel/session/messages'
import type { ModelPrice } from '@keel/session/cost'
import { type CacheTtl, placeCacheBreakpoints } from './anthropic-cache.ts'
import {
  LlmError,
  type FinishReason,
  type LlmAdapter,
  type LlmRequest,
  type ReasoningSettings,
  type StreamChunk,
} from './types.ts'

type Param = Anthropic.MessageParam
type Block = Anthropic.ContentBlockParam
type Event = Anthropic.RawMessageStreamEvent

export interface AnthropicAdapterOptions {
  model: string
  /** Extra request headers from the settings (`providers.<name>.headers`). */
  headers?: Record<string, string>
  /** Without the `/v1` suffix (the SDK adds `/v1/messages`); a trailing `/v1` is dropped. */
  baseURL: string
  apiKey?: string
  /** Used when there is no API key (ANTHROPIC_AUTH_TOKEN). */
  authToken?: string
  keyVariable: string
  contextWindow?: number
  /** `max_tokens` when the request names none (catalog.ts). */
  maxOutput: number
  price?: ModelPrice
  vision?: boolean
  /** How long prompt-cache entries live (anthropic-cache.ts); 5 minutes unless the settings say 1h. */
  cacheTtl?: CacheTtl
  /** Longest silence (no headers, then no stream event) before the request counts as dropped; default 90 s. */
  idleTimeoutMs?: number
  reasoning?: ReasoningSettings
  tell?: Tell
}

/**
 * `thinking` and `output_config.effort` from the settings: `on` is adaptive thinking (the model decides how much),
 * a number a fixed budget, `off` disabled; unset leaves the model's default
 * (https://platform.claude.com/docs/en/build-with-claude/extended-thinking, .../adaptive-thinking, .../effort).
 */
function thinkingFields(reasoning: ReasoningSettings | undefined): Partial<Anthropic.MessageCreateParamsStreaming> {
  const fields: Partial<Anthropic.MessageCreateParamsStreaming> = {}
  const { thinking, reasoningEffort } = reasoning ?? {}
  if (thinking === 'off') fields.thinking = { type: 'disabled' }
  else if (thinking === 'on') fields.thinking = { type: 'adaptive' }
  else if (typeof thinking === 'number') fields.thinking = { type: 'enabled', budget_tokens: thinking }
  if (reasoningEffort)
    fields.output_config = { effort: reasoningEffort as NonNullable<Anthropic.OutputConfig['effort']> }
  return fields
}

/**
 * Anthropic Messages API streaming adapter on `@anthropic-ai/sdk`. The SDK sends the key; its own retries are
 * off because `withRetries` in index.ts owns retry policy.
 */
export class AnthropicAdapter implements LlmAdapter {
  readonly provider = 'anthropic'
  readonly model: string
  readonly contextWindow?: number
  readonly price?: ModelPrice
  readonly vision?: boolean
  private readonly client: Anthropic
  private readonly where: FailureContext

  constructor(private readonly options: AnthropicAdapterOptions) {
    this.model = options.model
    this.contextWindow = options.contextWindow
    this.price = options.price
    this.vision = options.vision
    const baseURL = options.baseURL.replace(/\/+$/, '').replace(/\/v1$/, '')
    this.where = {
      provider: 'anthropic',
      keyVariable: options.keyVariable,
      baseURL,
      model: options.model,
      endpoint: `${baseURL}/v1/messages`,
    }
    this.client = new Anthropic({
      ...(options.apiKey ? { apiKey: options.apiKey } : { authToken: options.authToken ?? null }),
      baseURL,
      webhookKey: null,
      defaultHeaders: this.options.headers,
      maxRetries: 0,
      logLevel: 'off',
      openTelemetry: false,
    })
  }

  async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
    let leftOut = 0
    const body: Anthropic.MessageCreateParamsStreaming = {
      model: this.model,
      max_tokens: request.maxTokens ?? this.options.maxOutput,
      messages: toAnthropicMessages(request.messages, () => leftOut++),
      stream: true,
      ...thinkingFields(this.options.reasoning),
    }
    if (request.system) body.system = request.system
    if (request.tools.length) {
      body.tools = request.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        input_schema: tool.parameters as Anthropic.Tool.InputSchema,
      }))
    }
    placeCacheBreakpoints(body, this.options.cacheTtl ?? '5m')
    tellLeftOut(this.options.tell, 'anthropic', this.model, leftOut)

    const watch = new IdleWatch(signal, this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, 'anthropic')
    let iterator: AsyncIterator<Event>
    try {
      const response = await watch.wait(this.client.messages.create(body, { signal: watch.signal }), false)
      iterator = response[Symbol.asyncIterator]()
    } catch (error) {
      throw this.failure(error, signal, false)
    }

    // Content blocks by their index in the message: tool_use blocks get a tool slot (0, 1, …).
    const blocks = new Map<
      number,
      { kind: 'text' | 'thinking' | 'tool' | 'other'; slot: number; args: number; startInput?: string }
    >()
    let slots = 0
    let usage: TokenUsage | undefined
    let stop: string | null | undefined
    let stopped = false
    let done = false
    try {
      for (;;) {
        let next: IteratorResult<Event>
        try {
          next = await watch.wait(iterator.next(), blocks.size > 0)
        } catch (error) {
          throw this.failure(error, signal, true)
        }
        if (next.done) {
          done = true
          break
        }
        const event = next.value
        switch (event.type) {
          case 'message_start': {
            usage = usageOf(event.message.usage, { input: 0, output: 0 })
            break
          }
          case 'content_block_start': {
            const block = event.content_block
            if (block.type === 'text') {
              blocks.set(event.index, { kind: 'text', slot: -1, args: 0 })
              if (block.text) yield { type: 'text-delta', text: block.text }
            } else if (block.type === 'thinking') {
              // Each thinking block starts its own reasoning block: two in a row keep their own signatures.
              blocks.set(event.index, { kind: 'thinking', slot: -1, args: 0 })
              yield {
                type: 'reasoning-delta',
                start: true,
                origin: 'anthropic',
                text: block.thinking ?? '',
                ...(block.signature ? { signature: block.signature } : {}),
              }
            } else if (block.type === 'redacted_thinking') {
              // Encrypted reasoning: nothing to show, sent back unchanged (the API rejects a history without it).
              blocks.set(event.index, { kind: 'other', slot: -1, args: 0 })
              yield { type: 'reasoning-delta', start: true, origin: 'anthropic', text: '', data: block.data }
            } else if (block.type === 'tool_use') {
              const input =
                block.input && typeof block.input === 'object' && Object.keys(block.input).length
                  ? JSON.stringify(block.input)
                  : undefined
              const entry = { kind: 'tool' as const, slot: slots++, args: 0, startInput: input }
              blocks.set(event.index, entry)
              yield { type: 'tool-call-start', index: entry.slot, id: block.id, name: block.name }
            } else {
              // Server-tool blocks are not part of Keel's vocabulary.
              blocks.set(event.index, { kind: 'other', slot: -1, args: 0 })
            }
            break
          }
          case 'content_block_delta': {
            const block = blocks.get(event.index)
            const delta = event.delta
            if (delta.type === 'text_delta') {
              if (delta.text) yield { type: 'text-delta', text: delta.text }
            } else if (delta.type === 'thinking_delta') {
              if (delta.thinking) yield { type: 'reasoning-delta', text: delta.thinking }
            } else if (delta.type === 'signature_delta') {
              if (block?.kind === 'thinking') yield { type: 'reasoning-delta', text: '', signature: delta.signature }
            } else if (delta.type === 'input_json_delta') {
              if (block?.kind === 'tool' && delta.partial_json) {
                block.args += delta.partial_json.length
                yield { type: 'tool-call-delta', index: block.slot, argumentsDelta: delta.partial_json }
              }
            }
            break
          }
          case 'content_block_stop': {
            const block = blocks.get(event.index)
            // A tool with no streamed input still has an (empty) object of arguments.
            if (block?.kind === 'tool' && block.args === 0)
              yield { type: 'tool-call-delta', index: block.slot, argumentsDelta: block.startInput ?? '{}' }
            break
          }
          case 'message_delta': {
            stop = event.delta.stop_reason
            usage = usageOf(event.usage, usage ?? { input: 0, output: 0 })
            const thinking = event.usage.output_tokens_details?.thinking_tokens
            if (thinking) usage.reasoning = thinking
            break
          }
          case 'message_stop':
            stopped = true
            break
        }
      }
    } finally {
      if (!done) Promise.resolve(iterator.return?.()).catch(() => {})
    }
    // The SDK ends the iteration quietly when the request is aborted mid-stream.
    if (signal.aborted) throw new LlmError('aborted', 'request aborted')
    if (!stopped)
      throw new LlmError('network', 'anthropic: the stream ended before the reply was complete (no message_stop)')
    if (usage) yield { type: 'usage', usage }
    yield { type: 'finish', reason: finishReason(stop) }
  }

  private failure(error: unknown, signal: AbortSignal, midStream: boolean): LlmError {
    if (error instanceof LlmError) return error
    if (signal.aborted || error instanceof APIUserAbortError) return new LlmError('aborted', 'request aborted')
    if (error instanceof APIConnectionError)
      return providerError(this.where, { connection: true, message: causeText(error) })
    if (error instanceof APIError) {
      return providerError(this.where, {
        status: error.status,
        type: error.type,
        message: error.apiMessage ?? error.message.replace(/^\d{3}\s+/, ''),
        retryAfterMs: error.headers ? serverWaitMs((name) => error.headers?.get(name)) : undefined,
      })
    }
    if (error instanceof SyntaxError) return providerError(this.where, { malformed: true, message: error.message })
    return providerError(this.where, { connection: true, midStream, message: causeText(error) })
  }
}

/**
 * Anthropic reports the uncached input, the cache reads and the cache writes apart
 * (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#tracking-cache-performance); `input` is their
 * sum (the whole prompt), the two cache figures stay apart so they can be priced as such. `message_delta` repeats
 * only what changed, so a field it leaves out keeps the `message_start` value.
 */
function usageOf(
  raw: {
    input_tokens?: number | null
    output_tokens?: number | null
    cache_read_input_tokens?: number | null
    cache_creation_input_tokens?: number | null
  },
  before: TokenUsage,
): TokenUsage {
  const read = raw.cache_read_input_tokens ?? before.cacheRead ?? 0
  const write = raw.cache_creation_input_tokens ?? before.cacheWrite ?? 0
  const uncached =
    typeof raw.input_tokens === 'number'
      ? raw.input_tokens
      : before.input - (before.cacheRead ?? 0) - (before.cacheWrite ?? 0)
  const usage: TokenUsage = {
    input: uncached + read + write,
    output: typeof raw.output_tokens === 'number' ? raw.output_tokens : before.output,
  }
  if (read) usage.cacheRead = read
  if (write) usage.cacheWrite = write
  if (before.reasoning) usage.reasoning = before.reasoning
  return usage
}

function finishReason(stop: string | null | undefined): FinishReason {
  if (stop === 'tool_use') return 'tool-calls'
  if (stop === 'max_tokens' || stop === 'model_context_window_exceeded') return 'max-tokens'
  return 'stop'
}

/**
 * Provider-neutral history → Messages API turns. Anthropic's own reasoning goes back byte for byte, block by
 * block, in its place: `thinking` with its signature, `redacted_thinking` with its data
 * (https://platform.claude.com/docs/en/build-with-claude/extended-thinking, "Preserving thinking blocks";
 * .../preserved-thinking). Reasoning without a signature (an older log, another provider) is left out, which the
 * API accepts. Tool results become
 * `tool_result` blocks in a user turn; consecutive same-role messages merge into one turn, tool results first.
 */
function toAnthropicMessages(messages: readonly Message[], leftOut: () => void = () => {}): Param[] {
  const turns: { role: 'user' | 'assistant'; content: Block[] }[] = []
  const add = (role: 'user' | 'assistant', content: Block[]) => {
    if (!content.length) return
    const last = turns[turns.length - 1]
    if (last?.role === role) last.content.push(...content)
    else turns.push({ role, content })
  }
  for (const message of messages) {
    if (message.role === 'user') {
      const content: Block[] = []
      for (const block of message.content) {
        if (block.type === 'text' && block.text) content.push({ type: 'text', text: block.text })
        else if (block.type === 'image') content.push(imageBlock(block))
      }
      add('user', content)
    } else if (message.role === 'assistant') {
      const content: Block[] = []
      for (const block of message.content) {
        if (block.type === 'reasoning') {
          const ours = block.origin === 'anthropic' || (block.origin === undefined && block.signature)
          if (ours && block.data !== undefined && !block.signature)
            content.push({ type: 'redacted_thinking', data: block.data })
          else if (ours && block.signature)
            content.push({ type: 'thinking', thinking: block.text, signature: block.signature })
          else if (block.text || block.data) leftOut()
        } else if (block.type === 'text' && block.text) content.push({ type: 'text', text: block.text })
        else if (block.type === 'tool-call')
          content.push({ type: 'tool_use', id: block.id, name: block.name, input: parseInput(block.arguments) })
      }
      add('assistant', content)
    } else {
      add(
        'user',
        message.content.map((result) => ({
          type: 'tool_result' as const,
          tool_use_id: result.toolCallId,
          content: result.content
            .map((block) => (block.type === 'text' ? { type: 'text' as const, text: block.text } : imageBlock(block)))
            .filter((block) => block.type !== 'text' || block.text),
          ...(result.isError ? { is_error: true } : {}),
        })),
      )
    }
  }
  for (const turn of turns) {
    if (turn.role === 'user')
      turn.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'))
  }
  return turns
}

function imageBlock(block: ImageBlock): Anthropic.ImageBlockParam {
  return {
    type: 'image',
    source: {
      type: 'base64',
      media_type: block.mediaType as Anthropic.Base64ImageSource['media_type'],
      data: block.data,
    },
  }
}

/** Tool input must be an object; arguments the model garbled (the tool already reported that) go back as {}. */
function parseInput(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text || '{}')
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {}
  } catch {
    return {}
  }
}
