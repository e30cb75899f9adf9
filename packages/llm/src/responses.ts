import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai'
import type {
  FunctionTool,
  ResponseCreateParamsStreaming,
  ResponseInputContent,
  ResponseInputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses'
import type { ImageBlock, Message, TokenUsage } from '@keel/session/messages'
import type { ModelPrice } from '@keel/session/cost'
import { modelInfo } from './catalog.ts'
import { causeText, providerError, type FailureContext } from './errors.ts'
import { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch } from './idle.ts'
import { checkedUrl, requireKey, value } from './provider-checks.ts'
import { serverWaitMs } from './retries.ts'
import { type Tell, tellLeftOut } from './left-out.ts'
import {
  LlmError,
  type FinishReason,
  type LlmAdapter,
  type LlmRequest,
  type ProviderOptions,
  type ReasoningSettings,
  type StreamChunk,
} from './types.ts'

// OpenAI's Responses API (https://platform.openai.com/docs/api-reference/responses), on the official SDK, loaded
// only when an `openai/*` model is made (providers.ts). Stateless: `store: false`, and the reasoning comes back
// encrypted (`include: ["reasoning.encrypted_content"]`) to be sent back, item by item, before the calls it led to
// (https://cookbook.openai.com/examples/responses_api/reasoning_items; https://platform.openai.com/docs/guides/reasoning).

export interface ResponsesAdapterOptions {
  model: string
  /** Extra request headers from the settings (`providers.<name>.headers`). */
  headers?: Record<string, string>
  baseURL: string
  apiKey: string
  keyVariable: string
  organization?: string
  project?: string
  contextWindow?: number
  /** `max_output_tokens` when the request names none (the catalog's limit for the model). */
  maxOutput?: number
  price?: ModelPrice
  vision?: boolean
  idleTimeoutMs?: number
  reasoning?: ReasoningSettings
  tell?: Tell
}

/** Models that reason (and reject the `reasoning` field when they do not): the o-series, GPT-5 and codex. */
function reasons(model: string): boolean {
  return /^(o\d|gpt-5|codex)/.test(model.slice(model.lastIndexOf('/') + 1))
}

export function createResponses(model: string, options: ProviderOptions): ResponsesAdapter {
  const base = value(options.baseUrl) ?? value(options.env.OPENAI_BASE_URL) ?? 'https://api.openai.com/v1'
  const info = modelInfo('openai', model, options.models)
  return new ResponsesAdapter({
    model,
    baseURL: checkedUrl(base, 'openai', model),
    apiKey: requireKey('openai', model, 'OPENAI_API_KEY', options.env),
    keyVariable: 'OPENAI_API_KEY',
    organization: value(options.env.OPENAI_ORG_ID),
    project: value(options.env.OPENAI_PROJECT_ID),
    contextWindow: info.contextWindow,
    maxOutput: info.maxOutput,
    price: info.price,
    vision: info.vision ?? false,
    idleTimeoutMs: options.idleTimeoutMs,
    reasoning: options.reasoning,
    headers: options.headers,
    ...(options.tell ? { tell: options.tell } : {}),
  })
}

export class ResponsesAdapter implements LlmAdapter {
  readonly provider = 'openai'
  readonly model: string
  readonly contextWindow?: number
  readonly price?: ModelPrice
  readonly vision?: boolean
  private readonly client: OpenAI
  private readonly where: FailureContext

  constructor(readonly options: ResponsesAdapterOptions) {
    this.model = options.model
    this.contextWindow = options.contextWindow
    this.price = options.price
    this.vision = options.vision
    this.where = {
      provider: 'openai',
      keyVariable: options.keyVariable,
      baseURL: options.baseURL,
      model: options.model,
      endpoint: `${options.baseURL}/responses`,
    }
    this.client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      organization: options.organization ?? null,
      project: options.project ?? null,
      webhookSecret: null,
      defaultHeaders: options.headers,
      // withRetries (index.ts) owns retry policy, IdleWatch the silences.
      maxRetries: 0,
      timeout: 24 * 60 * 60 * 1000,
      logLevel: 'off',
    })
  }

  private body(request: LlmRequest): ResponseCreateParamsStreaming {
    let leftOut = 0
    const body: ResponseCreateParamsStreaming = {
      model: this.model,
      input: toResponsesInput(request.messages, () => leftOut++),
      stream: true,
      store: false,
      parallel_tool_calls: true,
    }
    if (request.system) body.instructions = request.system
    if (request.tools.length)
      body.tools = request.tools.map(
        (tool): FunctionTool => ({
          type: 'function',
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters as Record<string, unknown>,
          strict: false,
        }),
      )
    const maxTokens = request.maxTokens ?? this.options.maxOutput
    if (maxTokens) body.max_output_tokens = maxTokens
    // One key per session keeps its requests on the same cache (https://platform.openai.com/docs/guides/prompt-caching).
    if (request.sessionId) body.prompt_cache_key = request.sessionId
    if (reasons(this.model)) {
      const { thinking, reasoningEffort } = this.options.reasoning ?? {}
      const effort = reasoningEffort ?? (thinking === 'off' ? 'none' : undefined)
      body.include = ['reasoning.encrypted_content']
      body.reasoning = { summary: 'auto', ...(effort ? { effort: effort as 'low' } : {}) }
    }
    tellLeftOut(this.options.tell, 'openai', this.model, leftOut)
    return body
  }

  async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
    const watch = new IdleWatch(signal, this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, 'openai')
    let iterator: AsyncIterator<ResponseStreamEvent>
    try {
      const events = await watch.wait(this.client.responses.create(this.body(request), { signal: watch.signal }), false)
      iterator = events[Symbol.asyncIterator]()
    } catch (error) {
      throw this.failure(error, signal, false)
    }

    // Function-call items by item id: their tool slot (0, 1, …) and whether arguments streamed.
    const calls = new Map<string, { slot: number; streamed: boolean }>()
    let usage: TokenUsage | undefined
    let finish: FinishReason | undefined
    let started = false
    let done = false
    try {
      for (;;) {
        let next: IteratorResult<ResponseStreamEvent>
        try {
          next = await watch.wait(iterator.next(), started)
        } catch (error) {
          throw this.failure(error, signal, true)
        }
        if (next.done) {
          done = true
          break
        }
        started = true
        const event = next.value
        switch (event.type) {
          case 'response.output_item.added': {
            const item = event.item
            if (item.type === 'function_call') {
              const slot = calls.size
              calls.set(item.id ?? item.call_id, { slot, streamed: false })
              yield { type: 'tool-call-start', index: slot, id: item.call_id, name: item.name }
            } else if (item.type === 'reasoning') {
              yield { type: 'reasoning-delta', start: true, origin: 'responses', text: '' }
            }
            break
          }
          case 'response.reasoning_summary_part.added':
            if (event.summary_index > 0) yield { type: 'reasoning-delta', text: '\n\n' }
            break
          case 'response.reasoning_summary_text.delta':
          case 'response.reasoning_text.delta':
            if (event.delta) yield { type: 'reasoning-delta', text: event.delta }
            break
          case 'response.output_text.delta':
          case 'response.refusal.delta':
            if (event.delta) yield { type: 'text-delta', text: event.delta }
            break
          case 'response.function_call_arguments.delta': {
            const call = calls.get(event.item_id)
            if (call && event.delta) {
              call.streamed = true
              yield { type: 'tool-call-delta', index: call.slot, argumentsDelta: event.delta }
            }
            break
          }
          case 'response.output_item.done': {
            const item = event.item
            if (item.type === 'reasoning') {
              // The whole item, as the API gave it, is what goes back.
              yield { type: 'reasoning-delta', text: '', data: JSON.stringify(item), origin: 'responses' }
            } else if (item.type === 'function_call') {
              const call = calls.get(item.id ?? item.call_id)
              if (call && !call.streamed)
                yield { type: 'tool-call-delta', index: call.slot, argumentsDelta: item.arguments || '{}' }
            }
            break
          }
          case 'response.completed':
          case 'response.incomplete':
            if (event.response.usage) usage = usageOf(event.response.usage)
            finish =
              event.type === 'response.incomplete' && event.response.incomplete_details?.reason === 'max_output_tokens'
                ? 'max-tokens'
                : calls.size
                  ? 'tool-calls'
                  : 'stop'
            break
          case 'response.failed':
            throw providerError(this.where, {
              type: event.response.error?.code,
              message: event.response.error?.message ?? 'the response failed',
            })
          case 'error':
            throw providerError(this.where, { type: event.code, message: event.message })
        }
      }
    } finally {
      if (!done) Promise.resolve(iterator.return?.()).catch(() => {})
    }
    if (signal.aborted) throw new LlmError('aborted', 'request aborted')
    if (!finish)
      throw new LlmError('network', 'openai: the stream ended before the reply was complete (no response.completed)')
    if (usage) yield { type: 'usage', usage }
    yield { type: 'finish', reason: finish }
  }

  private failure(error: unknown, signal: AbortSignal, midStream: boolean): LlmError {
    if (error instanceof LlmError) return error
    if (signal.aborted || error instanceof APIUserAbortError) return new LlmError('aborted', 'request aborted')
    if (error instanceof APIConnectionError)
      return providerError(this.where, { connection: true, midStream, message: causeText(error) })
    if (error instanceof APIError) {
      const body = error.error as { message?: unknown; type?: unknown } | undefined
      return providerError(this.where, {
        status: error.status,
        type: typeof body?.type === 'string' ? body.type : undefined,
        message: typeof body?.message === 'string' ? body.message : error.message.replace(/^\d{3}\s+/, ''),
        retryAfterMs: error.headers ? serverWaitMs((name) => error.headers?.get(name)) : undefined,
      })
    }
    if (error instanceof SyntaxError) return providerError(this.where, { malformed: true, message: error.message })
    return providerError(this.where, { connection: true, midStream, message: causeText(error) })
  }
}

function usageOf(raw: ResponseUsage): TokenUsage {
  const usage: TokenUsage = { input: raw.input_tokens ?? 0, output: raw.output_tokens ?? 0 }
  const cached = raw.input_tokens_details?.cached_tokens
  if (cached) usage.cacheRead = cached
  const reasoning = raw.output_tokens_details?.reasoning_tokens
  if (reasoning) usage.reasoning = reasoning
  return usage
}

/** One message's Responses items, the images its tool results carry, and how much reasoning it had to leave out. */
interface Converted {
  items: ResponseInputItem[]
  images: ResponseInputContent[]
  leftOut: number
}

/**
 * Converted messages by message. The history a session derives is frozen and the same objects from request to
 * request, so each is converted once (a reasoning item's JSON parsed once, an image's data URL built once), not on
 * every request of the session. Only frozen messages are kept: a caller's mutable object is converted each time.
 */
const converted = new WeakMap<Message, Converted>()

/**
 * Provider-neutral history → Responses input items, in order. An assistant message that made tool calls brings back
 * its own encrypted reasoning items (origin `responses`) where they were, before its calls; other reasoning (an
 * older log, another provider, a reply without calls, which the API drops anyway) is left out.
 */
export function toResponsesInput(messages: readonly Message[], leftOut: () => void = () => {}): ResponseInputItem[] {
  const out: ResponseInputItem[] = []
  let toolImages: ResponseInputContent[] = []
  const flushToolImages = () => {
    if (toolImages.length)
      out.push({
        role: 'user',
        content: [{ type: 'input_text', text: 'Images returned by the tool calls above:' }, ...toolImages],
      })
    toolImages = []
  }
  for (const message of messages) {
    if (message.role !== 'tool') flushToolImages()
    let done = converted.get(message)
    if (!done) {
      done = convert(message)
      if (Object.isFrozen(message)) converted.set(message, done)
    }
    for (let i = 0; i < done.leftOut; i++) leftOut()
    for (const item of done.items) out.push(item)
    for (const image of done.images) toolImages.push(image)
  }
  flushToolImages()
  return out
}

function convert(message: Message): Converted {
  const out: ResponseInputItem[] = []
  const images: ResponseInputContent[] = []
  let leftOut = 0
  if (message.role === 'user') {
    const parts: ResponseInputContent[] = []
    for (const block of message.content) {
      if (block.type === 'text' && block.text) parts.push({ type: 'input_text', text: block.text })
      else if (block.type === 'image') parts.push(imagePart(block))
    }
    if (parts.length) out.push({ role: 'user', content: parts })
  } else if (message.role === 'assistant') {
    const withCalls = message.content.some((block) => block.type === 'tool-call')
    let text = ''
    const flushText = () => {
      if (text) out.push({ role: 'assistant', content: text })
      text = ''
    }
    for (const block of message.content) {
      if (block.type === 'reasoning') {
        if (!withCalls) continue
        const item = block.origin === 'responses' && block.data ? parseItem(block.data) : undefined
        if (!item) {
          if (block.text || block.data) leftOut++
          continue
        }
        flushText()
        out.push(item)
      } else if (block.type === 'text') text += block.text
      else if (block.type === 'tool-call') {
        flushText()
        out.push({ type: 'function_call', call_id: block.id, name: block.name, arguments: block.arguments || '{}' })
      }
    }
    flushText()
  } else {
    for (const result of message.content) {
      const text = result.content
        .map((block) => (block.type === 'text' ? block.text : `[image ${block.mediaType} attached below]`))
        .join('\n')
      out.push({ type: 'function_call_output', call_id: result.toolCallId, output: text || '(no output)' })
      for (const block of result.content) if (block.type === 'image') images.push(imagePart(block))
    }
  }
  return { items: out, images, leftOut }
}

function parseItem(text: string): ResponseInputItem | undefined {
  try {
    const item = JSON.parse(text) as { type?: unknown }
    return item && item.type === 'reasoning' ? (item as ResponseInputItem) : undefined
  } catch {
    return undefined
  }
}

function imagePart(block: ImageBlock): ResponseInputContent {
  return { type: 'input_image', detail: 'auto', image_url: `data:${block.mediaType};base64,${block.data}` }
}
