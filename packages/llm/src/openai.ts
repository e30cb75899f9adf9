import { randomUUID } from 'node:crypto'
import type { ImageBlock, Message, TokenUsage } from '@keel/session/messages'
import type { ModelPrice } from '@keel/session/cost'
import { ConnectionError, type EventStream, HttpStatusError, postEventStream } from './event-stream.ts'
import { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch } from './idle.ts'
import { causeText, providerError, type FailureContext } from './errors.ts'
import { serverWaitMs } from './retries.ts'
import { type Tell, tellLeftOut } from './left-out.ts'
import type { CacheTtl } from './anthropic-cache.ts'
import { placeChatBreakpoints, takesChatBreakpoints } from './chat-cache.ts'
import {
  LlmError,
  type FinishReason,
  type LlmAdapter,
  type LlmRequest,
  type ReasoningSettings,
  type StreamChunk,
} from './types.ts'
import type {
  ChatChunk,
  ChatMessage,
  ChatRequest,
  ChatToolCall,
  ChatToolCallDelta,
  ChatUsage,
  ReasoningDetail,
  UserPart,
} from './openai-wire.ts'

export interface OpenAiAdapterOptions {
  /** Provider name as the user typed it (`deepseek`, `openai`, `openrouter`, `openai-compatible`). */
  provider: string
  model: string
  baseURL: string
  /** Omitted: no Authorization header at all (local servers). */
  apiKey?: string
  /** The variable the key comes from, named in auth errors. */
  keyVariable: string
  contextWindow?: number
  /** `max_tokens` when the request names none (catalog.ts); unset leaves the server's default. */
  maxOutput?: number
  price?: ModelPrice
  vision?: boolean
  /** Claude through OpenRouter: the prompt-cache lifetime of its breakpoints (chat-cache.ts). */
  cacheTtl?: CacheTtl
  /** OpenAI's own API wants `max_completion_tokens`; most compatible servers still read `max_tokens`. */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens'
  organization?: string
  project?: string
  headers?: Record<string, string>
  tell?: Tell
  /** Longest silence (no headers, then no stream event) before the request counts as dropped; default 90 s. */
  idleTimeoutMs?: number
  reasoning?: ReasoningSettings
}

/**
 * What goes back to each flavour. DeepSeek: `reasoning_content` on assistant messages, required on those with
 * tool calls while thinking is on (https://api-docs.deepseek.com/guides/thinking_mode); "interleaved thinking"
 * servers (GLM, Kimi, vLLM, LocalAI) read the same field. OpenRouter: `reasoning_details` unchanged
 * (https://openrouter.ai/docs/use-cases/reasoning-tokens, "Preserving reasoning blocks"). OpenAI's chat
 * completions takes neither: its reasoning travels only through the Responses API (responses.ts).
 */
function sendsBack(provider: string, reasoning: ReasoningSettings | undefined): 'content' | 'details' | undefined {
  if (provider === 'openrouter') return 'details'
  if ((provider === 'deepseek' || provider === 'openai-compatible') && reasoning?.sendReasoning !== false)
    return 'content'
  return undefined
}

/** The request fields that turn thinking on or off and set its effort, in each flavour's own words. */
function reasoningFields(provider: string, reasoning: ReasoningSettings | undefined): Partial<ChatRequest> {
  const { thinking, reasoningEffort } = reasoning ?? {}
  if (provider === 'openrouter') {
    // Requested by default: a model without reasoning ignores it (openrouter.ai/docs/use-cases/reasoning-tokens).
    if (thinking === 'off') return { reasoning: { enabled: false } }
    if (typeof thinking === 'number') return { reasoning: { max_tokens: thinking } }
    return { reasoning: reasoningEffort ? { effort: reasoningEffort } : { enabled: true } }
  }
  const fields: Partial<ChatRequest> = {}
  if (reasoningEffort) fields.reasoning_effort = reasoningEffort
  if (provider !== 'openai' && thinking !== undefined)
    fields.thinking = { type: thinking === 'off' ? 'disabled' : 'enabled' }
  return fields
}

/**
 * OpenAI-compatible chat-completions adapter (DeepSeek, OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio):
 * a streamed POST to `<baseURL>/chat/completions` on node:http (event-stream.ts). No retries here: `withRetries` in
 * index.ts owns retry policy, IdleWatch the silences.
 */
export class OpenAiAdapter implements LlmAdapter {
  readonly provider: string
  readonly model: string
  readonly contextWindow?: number
  readonly price?: ModelPrice
  readonly vision?: boolean
  private readonly url: string
  private readonly headers: Record<string, string>
  private readonly where: FailureContext

  constructor(readonly options: OpenAiAdapterOptions) {
    this.provider = options.provider
    this.model = options.model
    this.contextWindow = options.contextWindow
    this.price = options.price
    this.vision = options.vision
    this.url = `${options.baseURL.replace(/\/+$/, '')}/chat/completions`
    this.where = {
      provider: options.provider,
      keyVariable: options.keyVariable,
      baseURL: options.baseURL,
      model: options.model,
      endpoint: this.url,
    }
    this.headers = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'user-agent': 'keel',
      ...options.headers,
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      ...(options.organization ? { 'openai-organization': options.organization } : {}),
      ...(options.project ? { 'openai-project': options.project } : {}),
    }
  }

  async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
    let leftOut = 0
    const body: ChatRequest = {
      model: this.model,
      messages: toChatMessages(
        request.system,
        request.messages,
        sendsBack(this.provider, this.options.reasoning),
        () => leftOut++,
      ),
      stream: true,
      stream_options: { include_usage: true },
      ...reasoningFields(this.provider, this.options.reasoning),
    }
    if (request.tools.length) {
      body.tools = request.tools.map((tool) => ({
        type: 'function',
        function: {
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters as Record<string, unknown>,
        },
      }))
    }
    if (takesChatBreakpoints(this.provider, this.model)) placeChatBreakpoints(body, this.options.cacheTtl)
    const maxTokens = request.maxTokens ?? this.options.maxOutput
    if (maxTokens) body[this.options.maxTokensField ?? 'max_tokens'] = maxTokens
    tellLeftOut(this.options.tell, this.provider, this.model, leftOut)

    const watch = new IdleWatch(signal, this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, this.provider)
    let response: EventStream
    try {
      const pending = postEventStream(this.url, {
        headers: this.headers,
        body: JSON.stringify(body),
        signal: watch.signal,
      })
      response = await watch.wait(pending, false)
    } catch (error) {
      throw this.failure(error, signal, false)
    }

    const calls = new ToolCallTracker()
    const details: ReasoningDetail[] = []
    let finish: string | undefined
    let usage: TokenUsage | undefined
    let done = false
    let started = false
    try {
      for (;;) {
        let chunk: ChatChunk
        try {
          const next = await watch.wait(response.events.next(), started)
          if (next.done || next.value.data.startsWith('[DONE]')) {
            done = true
            break
          }
          chunk = JSON.parse(next.value.data) as ChatChunk
        } catch (error) {
          throw this.failure(error, signal, true)
        }
        // An error inside a 200 stream (OpenAI, OpenRouter and vLLM send one when generation fails).
        if (chunk.error) throw this.failure(chunk, signal, true)
        started = true
        if (chunk.usage) usage = usageOf(chunk.usage)
        const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0)
        if (!choice) continue
        const delta = choice.delta ?? {}
        const reasoning = delta.reasoning_content ?? delta.reasoning
        if (typeof reasoning === 'string' && reasoning) yield { type: 'reasoning-delta', text: reasoning }
        if (Array.isArray(delta.reasoning_details) && delta.reasoning_details.length) {
          addDetails(details, delta.reasoning_details)
          // The whole array so far, so the block always holds what goes back (its text streamed just above).
          yield { type: 'reasoning-delta', text: '', data: JSON.stringify(details), origin: 'openrouter' }
        }
        if (typeof delta.content === 'string' && delta.content) yield { type: 'text-delta', text: delta.content }
        for (const call of delta.tool_calls ?? []) yield* calls.push(call)
        if (choice.finish_reason) finish = choice.finish_reason
      }
    } finally {
      // A consumer that stops early (or a failure above) must not leave the HTTP stream running.
      if (!done) response.close()
    }
    if (signal.aborted) throw new LlmError('aborted', 'request aborted')
    if (!finish)
      throw new LlmError(
        'network',
        `${this.provider}: the stream ended before the reply was complete (no finish reason)`,
      )
    if (usage) yield { type: 'usage', usage }
    yield { type: 'finish', reason: finishReason(finish, calls.count > 0) }
  }

  private failure(error: unknown, signal: AbortSignal, midStream: boolean): LlmError {
    if (error instanceof LlmError) return error
    if (signal.aborted) return new LlmError('aborted', 'request aborted')
    if (error instanceof ConnectionError)
      return providerError(this.where, { connection: true, midStream: error.midStream, message: causeText(error) })
    if (error instanceof HttpStatusError)
      return providerError(this.where, {
        status: error.status,
        ...errorBody(error.body),
        retryAfterMs: serverWaitMs((name) => headerOf(error.headers, name)),
      })
    if (error instanceof SyntaxError) return providerError(this.where, { malformed: true, message: error.message })
    const inStream = (error as ChatChunk | undefined)?.error
    if (inStream) return providerError(this.where, describe(inStream))
    return providerError(this.where, { connection: true, midStream, message: causeText(error) })
  }
}

/** An error body as providers send it: `{"error": {"message", "type"}}`, `{"error": "text"}`, or plain text. */
function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

function errorBody(text: string): { message: string; type?: string; code?: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return { message: text.trim() }
  }
  const error = (parsed as { error?: unknown } | null)?.error ?? parsed
  return describe(error)
}

function describe(error: unknown): { message: string; type?: string; code?: string } {
  if (typeof error === 'string') return { message: error }
  const { message, type, code } = (error ?? {}) as { message?: unknown; type?: unknown; code?: unknown }
  return {
    message: typeof message === 'string' ? message : JSON.stringify(error),
    type: typeof type === 'string' ? type : undefined,
    code: typeof code === 'string' ? code : typeof code === 'number' ? String(code) : undefined,
  }
}

/**
 * Streamed `reasoning_details` pieces folded as OpenRouter's own SDK folds them: a piece with the index and type of
 * the last one extends its text (or summary); any other field it carries (signature, data, id) is taken as is.
 */
function addDetails(into: ReasoningDetail[], pieces: readonly ReasoningDetail[]): void {
  for (const piece of pieces) {
    if (!piece || typeof piece !== 'object') continue
    const last = into[into.length - 1]
    if (last && last.type === piece.type && (last.index ?? 0) === (piece.index ?? 0)) {
      const { text, summary, ...rest } = piece
      if (typeof text === 'string') last.text = (last.text ?? '') + text
      if (typeof summary === 'string') last.summary = (last.summary ?? '') + summary
      for (const [key, value] of Object.entries(rest)) if (value !== null && value !== undefined) last[key] = value
    } else into.push({ ...piece })
  }
}

/** Accumulates streamed tool calls by their `index` and emits tool-call-start / tool-call-delta chunks. */
class ToolCallTracker {
  private readonly byIndex = new Map<
    number,
    { slot: number; id: string; name: string; started: boolean; pending: string }
  >()
  /** Tool calls started so far; also the next slot. */
  count = 0;

  *push(delta: ChatToolCallDelta): Generator<StreamChunk> {
    const index = typeof delta.index === 'number' ? delta.index : this.byIndex.size
    let call = this.byIndex.get(index)
    // Some servers reuse index 0 for every call; a new id at a known index is a new call.
    if (call && delta.id && call.id && delta.id !== call.id) call = undefined
    if (!call) {
      call = { slot: this.count++, id: '', name: '', started: false, pending: '' }
      this.byIndex.set(index, call)
    }
    if (delta.id && !call.id) call.id = delta.id
    if (delta.function?.name && !call.started) call.name += delta.function.name
    const args = delta.function?.arguments ?? ''
    if (!call.started && call.name) {
      call.started = true
      yield {
        type: 'tool-call-start',
        index: call.slot,
        id: call.id || `call_${randomUUID().slice(0, 8)}_${call.slot}`,
        name: call.name,
      }
      if (call.pending) yield { type: 'tool-call-delta', index: call.slot, argumentsDelta: call.pending }
      call.pending = ''
    }
    if (!args) return
    if (call.started) yield { type: 'tool-call-delta', index: call.slot, argumentsDelta: args }
    else call.pending += args
  }
}

function finishReason(reason: string, sawToolCalls: boolean): FinishReason {
  if (reason === 'length') return 'max-tokens'
  // Some servers say "stop" after emitting tool calls; the calls are what matters.
  if (reason === 'tool_calls' || reason === 'function_call' || sawToolCalls) return 'tool-calls'
  return 'stop'
}

function usageOf(raw: ChatUsage): TokenUsage {
  const usage: TokenUsage = { input: raw.prompt_tokens ?? 0, output: raw.completion_tokens ?? 0 }
  const cached = raw.prompt_tokens_details?.cached_tokens ?? raw.prompt_cache_hit_tokens
  if (typeof cached === 'number' && cached > 0) usage.cacheRead = cached
  const reasoning = raw.completion_tokens_details?.reasoning_tokens
  if (typeof reasoning === 'number' && reasoning > 0) usage.reasoning = reasoning
  return usage
}

/**
 * Provider-neutral history → chat messages. Assistant tool calls become `tool_calls`, each tool result a
 * `tool` message; images ride user messages as data URLs (tool-result images follow the run of tool messages in
 * one user message, since `tool` messages carry text only). Reasoning goes back as `sendsBack` says: its text as
 * `reasoning_content` (never a signature or another provider's opaque data), or OpenRouter's own details.
 */
export function toChatMessages(
  system: string,
  messages: readonly Message[],
  reasoning?: 'content' | 'details',
  leftOut: () => void = () => {},
): ChatMessage[] {
  const out: ChatMessage[] = []
  if (system) out.push({ role: 'system', content: system })
  let toolImages: UserPart[] = []
  const flushToolImages = () => {
    if (toolImages.length)
      out.push({
        role: 'user',
        content: [{ type: 'text', text: 'Images returned by the tool calls above:' }, ...toolImages],
      })
    toolImages = []
  }
  for (const message of messages) {
    if (message.role !== 'tool') flushToolImages()
    if (message.role === 'user') {
      const parts: UserPart[] = []
      for (const block of message.content) {
        if (block.type === 'text' && block.text) parts.push({ type: 'text', text: block.text })
        else if (block.type === 'image') parts.push(imagePart(block))
      }
      if (!parts.length) continue
      out.push({
        role: 'user',
        content: parts.every((part) => part.type === 'text')
          ? parts.map((part) => (part as { text: string }).text).join('\n')
          : parts,
      })
    } else if (message.role === 'assistant') {
      let text = ''
      let thought: string | undefined
      let details: unknown[] | undefined
      const toolCalls: ChatToolCall[] = []
      for (const block of message.content) {
        if (block.type === 'reasoning') {
          if (block.text) thought = (thought ?? '') + block.text
          const own = block.origin === 'openrouter' && block.data ? parseDetails(block.data) : undefined
          if (own) details = own
          // What this flavour cannot carry: opaque data as `reasoning_content`, anything but OpenRouter's own details.
          if (
            reasoning === 'content'
              ? !block.text && block.data
              : reasoning === 'details' && !own && (block.text || block.data)
          )
            leftOut()
        } else if (block.type === 'text') text += block.text
        else if (block.type === 'tool-call')
          toolCalls.push({
            id: block.id,
            type: 'function',
            function: { name: block.name, arguments: block.arguments || '{}' },
          })
      }
      if (!text && !toolCalls.length) continue
      const assistant: ChatMessage = toolCalls.length
        ? { role: 'assistant', content: text || null, tool_calls: toolCalls }
        : { role: 'assistant', content: text }
      // A tool-call message without reasoning (an older log, another provider's turn) still gets the field: DeepSeek
      // answers 400 when it is missing, and takes an empty one.
      if (reasoning === 'content' && (thought !== undefined || toolCalls.length))
        assistant.reasoning_content = thought ?? ''
      if (reasoning === 'details' && details) assistant.reasoning_details = details
      out.push(assistant)
    } else {
      for (const result of message.content) {
        const text = result.content
          .map((block) => (block.type === 'text' ? block.text : `[image ${block.mediaType} attached below]`))
          .join('\n')
        out.push({ role: 'tool', tool_call_id: result.toolCallId, content: text || '(no output)' })
        for (const block of result.content) if (block.type === 'image') toolImages.push(imagePart(block))
      }
    }
  }
  flushToolImages()
  return out
}

function parseDetails(text: string): unknown[] | undefined {
  try {
    const value = JSON.parse(text)
    return Array.isArray(value) ? value : undefined
  } catch {
    return undefined
  }
}

function imagePart(block: ImageBlock): UserPart {
  return { type: 'image_url', image_url: { url: `data:${block.mediaType};base64,${block.data}` } }
}
