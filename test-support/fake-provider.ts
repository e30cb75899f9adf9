/**
 * A fake model provider for tests: a node:http server on 127.0.0.1 (port 0) that streams real SSE in the
 * OpenAI chat-completions shape (`POST /v1/chat/completions`), the OpenAI Responses shape (`POST /v1/responses`)
 * and the Anthropic Messages shape (`POST /v1/messages`), so the real SDK-based adapters can be exercised without
 * the network.
 *
 * It is strict: a request that breaks a documented rule of the real API gets the 400 the real API answers
 * (see `strictError`, each rule with its page), so a test passes only on bytes the provider accepts.
 *
 *   const fake = await startFakeProvider([{ text: 'hello' }, { toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] }])
 *   // OpenAI-compatible base URL: `${fake.url}/v1`; Anthropic base URL: fake.url
 *   fake.requests[0].body  // the parsed JSON body the client sent
 *   await fake.close()
 *
 * Every request, to either endpoint, takes the next reply from the script (in order). When the script runs
 * out the server answers 400 "script exhausted", which adapters report as a non-retryable bad request.
 * `replies` is the live queue, so a test may push more replies after starting the server.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

interface FakeToolCall {
  name: string
  /** An object is sent as its JSON text; a string is sent verbatim (so a test can send broken JSON). */
  arguments: unknown
  id?: string
}

/**
 * One reply. The plain `{ text?, toolCalls? }` shape is enough for most tests (and matches the scripted
 * adapter's steps); the other fields shape the stream or replace it.
 */
export interface FakeReply {
  /** Answer with this HTTP status and a provider-shaped JSON error body instead of a stream. */
  status?: number
  /** Message in that error body (default: a short description of the status). */
  error?: string
  /** Streamed first, in word-sized deltas (OpenAI: `reasoning_content`, DeepSeek-style; Anthropic: a thinking block). */
  reasoning?: string
  /** Anthropic only: the signature of the thinking block (default `sig-<n>`). */
  signature?: string
  /**
   * Anthropic only: several reasoning blocks before the text, in order (instead of `reasoning`): thinking blocks
   * with their own signature, and `redacted_thinking` blocks (`redacted`: their opaque data).
   */
  thinking?: ({ thinking: string; signature?: string } | { redacted: string })[]
  /** Streamed in word-sized deltas. */
  text?: string
  /** Streamed after the text: a start delta (id + name), then the arguments in `chunkSize`-character fragments. */
  toolCalls?: FakeToolCall[]
  /** Characters per tool-argument fragment (default 4). */
  chunkSize?: number
  /** OpenAI only: send all tool-call starts first, then interleave their argument fragments round-robin. */
  interleave?: boolean
  /** Token usage to report (default: rough estimates). `input` is the whole prompt, cache reads and writes included. */
  usage?: FakeUsage
  /** Extra response headers (with `status`: `retry-after`, `retry-after-ms`, the rate-limit reset headers). */
  headers?: Record<string, string>
  /** OpenAI only: after the content, an error inside the 200 stream (`data: {"error": …}`), and no finish. */
  streamError?: { message: string; type?: string; code?: string }
  /** After the content, stream text deltas of this many characters without end, until the client goes away. */
  endless?: number
  /** Override the finish reason (OpenAI: stop | length | tool_calls; Anthropic: end_turn | max_tokens | tool_use). */
  finish?: string
  /** Drop the connection (socket destroyed) after this many SSE events have been written. */
  disconnectAfter?: number
  /** After the content, keep the stream open until the client goes away (to test abort). */
  hang?: boolean
  /**
   * Go silent after this many SSE events (0: right after the response headers), keeping the connection open and
   * sending nothing more until the client goes away: a provider that stalls mid-stream.
   */
  stallAfter?: number
  /** Go silent before sending anything, not even the response headers, until the client goes away. */
  stallBeforeHeaders?: boolean
  /** Pause before each SSE event. */
  delayMs?: number
  /** Pause once, after the response headers and before the first event: a model thinking before it answers. */
  firstTokenMs?: number
}

interface FakeUsage {
  input: number
  output: number
  cacheRead?: number
  cacheWrite?: number
}

interface RecordedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** Parsed JSON (the raw text when it is not JSON). */
  body: any
  /** When the request line arrived (epoch ms), for start-up benchmarks. */
  at: number
  /** When the last byte of the answer was handed to the socket (epoch ms), for the gap between model turns. */
  end?: number
}

export interface FakeProvider {
  /** `http://127.0.0.1:<port>` (no trailing slash, no /v1). */
  url: string
  requests: RecordedRequest[]
  replies: FakeReply[]
  /** `GET /v1/models` calls, kept apart from `requests` (which are the model requests). */
  listings: number
  close(): Promise<void>
}

export interface FakeProviderOptions {
  /** Accept what the real APIs reject (for tests about something else that send hand-made history). */
  lenient?: boolean
  /** `GET /v1/models` answers `{ object: 'list', data: models }` (vLLM-style entries); without it, 404. */
  models?: object[]
  /**
   * Answer as the Portkey gateway does in front of the provider: a request must say where it goes with an
   * `x-portkey-provider` or `x-portkey-config` header (https://portkey.ai/docs/api-reference/inference-api/headers),
   * else 400 `{"status":"failure","message":"Either x-portkey-config or x-portkey-provider header is required"}`
   * (what gateway 1.15.2 answered in the turn-3 real-world run).
   */
  portkey?: boolean
}

export async function startFakeProvider(
  script: FakeReply[] = [],
  options: FakeProviderOptions = {},
): Promise<FakeProvider> {
  const replies = [...script]
  const requests: RecordedRequest[] = []
  const issued = new Issued()
  let served = 0

  const server = createServer((req, res) => {
    const at = Date.now()
    let raw = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      raw += chunk
    })
    req.on('end', () => {
      let body: unknown = raw
      try {
        body = raw ? JSON.parse(raw) : undefined
      } catch {
        /* keep the raw text */
      }
      const path = (req.url ?? '/').split('?')[0]!
      if (req.method === 'GET' && path === '/v1/models') {
        fake.listings++
        if (!options.models) return sendError(res, 'openai', 404, 'fake provider: no model list')
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ object: 'list', data: options.models }))
      }
      const record: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, at }
      requests.push(record)
      res.on('finish', () => {
        record.end = Date.now()
      })
      if (options.portkey && !req.headers['x-portkey-provider'] && !req.headers['x-portkey-config']) {
        res.writeHead(400, { 'content-type': 'application/json' })
        return res.end(
          JSON.stringify({
            status: 'failure',
            message: 'Either x-portkey-config or x-portkey-provider header is required',
          }),
        )
      }
      const flavor =
        req.method !== 'POST'
          ? undefined
          : path === '/v1/chat/completions'
            ? 'openai'
            : path === '/v1/messages'
              ? 'anthropic'
              : path === '/v1/responses'
                ? 'responses'
                : undefined
      if (!flavor) return sendError(res, 'openai', 404, `fake provider: no route for ${req.method} ${path}`)
      const broken = options.lenient ? undefined : strictError(flavor, body, issued)
      if (broken) return sendError(res, flavor, 400, broken)
      const reply = replies.shift()
      const n = ++served
      if (!reply) return sendError(res, flavor, 400, `fake provider: script exhausted (request ${n})`)
      const rejected = flavor === 'anthropic' ? anthropicCacheRule(body) : undefined
      if (rejected) return sendError(res, flavor, 400, rejected)
      if (reply.status)
        return sendError(
          res,
          flavor,
          reply.status,
          reply.error ?? `fake provider: status ${reply.status}`,
          reply.headers,
        )
      if (reply.stallBeforeHeaders) return // the request is read; no byte of an answer follows
      const events =
        flavor === 'openai'
          ? openaiEvents(reply, body as OpenAiBody, n, issued)
          : flavor === 'responses'
            ? responsesEvents(reply, body as ResponsesBody, n, issued)
            : anthropicEvents(reply, body, n, issued)
      void stream(res, events, reply)
    })
  })
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  const { port } = server.address() as AddressInfo
  const fake: FakeProvider = {
    url: `http://127.0.0.1:${port}`,
    requests,
    replies,
    listings: 0,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
  return fake
}

type Flavor = 'openai' | 'responses' | 'anthropic'

/**
 * The Messages API's prompt-caching rules (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
 * at most 4 blocks carry `cache_control` ("A maximum of 4 blocks with cache_control may be provided. Found N."),
 * its `type` is "ephemeral" and its `ttl` "5m" or "1h", a 1h breakpoint never follows a 5m one in render order
 * (tools → system → messages), and thinking blocks cannot carry one ("Thinking blocks cannot be marked with
 * cache_control directly"). Returns the error message, or undefined when the body keeps them.
 */
function anthropicCacheRule(body: unknown): string | undefined {
  const b = (body ?? {}) as { tools?: unknown[]; system?: unknown; messages?: { content?: unknown }[] }
  const blocks: Record<string, unknown>[] = []
  for (const tool of b.tools ?? []) blocks.push(tool as Record<string, unknown>)
  if (Array.isArray(b.system)) blocks.push(...(b.system as Record<string, unknown>[]))
  for (const message of b.messages ?? [])
    if (Array.isArray(message.content)) blocks.push(...(message.content as Record<string, unknown>[]))
  const marked = blocks.filter((block) => block.cache_control !== undefined)
  if (marked.length > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${marked.length}.`
  let short = false
  for (const block of marked) {
    const control = block.cache_control as { type?: unknown; ttl?: unknown }
    if (control?.type !== 'ephemeral') return `cache_control.type: Input should be 'ephemeral'`
    if (control.ttl !== undefined && control.ttl !== '5m' && control.ttl !== '1h')
      return `cache_control.ttl: Input should be '5m' or '1h'`
    if (block.type === 'thinking' || block.type === 'redacted_thinking')
      return 'Thinking blocks cannot be marked with cache_control directly'
    const ttl = control.ttl ?? '5m'
    if (ttl === '1h' && short)
      return 'a ttl="1h" cache_control block must not come after a ttl="5m" cache_control block'
    if (ttl === '5m') short = true
  }
  return undefined
}

function sendError(
  res: ServerResponse,
  flavor: Flavor,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body =
    flavor !== 'anthropic'
      ? {
          error: {
            message,
            type:
              status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : 'invalid_request_error',
            code: null,
          },
        }
      : { type: 'error', error: { type: anthropicErrorType(status), message } }
  res.writeHead(status, { ...headers, 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error'
  if (status === 403) return 'permission_error'
  if (status === 429) return 'rate_limit_error'
  if (status === 529) return 'overloaded_error'
  if (status >= 500) return 'api_error'
  return 'invalid_request_error'
}

/** Writes SSE events one by one, honouring `firstTokenMs`, `delayMs`, `disconnectAfter`, `stallAfter` and `hang`. */
async function stream(res: ServerResponse, events: SseEvents, reply: FakeReply): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  let closed = false
  res.on('close', () => {
    closed = true
  })
  const write = (text: string) => new Promise<void>((done) => res.write(text, () => done()))
  const all = reply.hang || reply.endless ? events.content : [...events.content, ...events.tail]
  const limit = Math.min(reply.disconnectAfter ?? Infinity, reply.stallAfter ?? Infinity)
  if (reply.stallAfter === 0) res.flushHeaders()
  if (reply.firstTokenMs) {
    res.flushHeaders()
    await new Promise((done) => setTimeout(done, reply.firstTokenMs))
  }
  for (const [i, event] of all.entries()) {
    if (closed || i >= limit) break
    if (reply.delayMs) await new Promise((done) => setTimeout(done, reply.delayMs))
    await write(event)
  }
  if (closed) return
  if (reply.endless) {
    const piece = events.endless(reply.endless)
    while (!closed) await write(piece)
    return
  }
  if (reply.stallAfter !== undefined) return // silent, left open until the client goes away (or close())
  if (reply.disconnectAfter !== undefined) {
    // Let the written bytes reach the client, then cut the connection without ending the chunked body.
    await new Promise((done) => setTimeout(done, 20))
    res.socket?.destroy()
    return
  }
  if (reply.hang) return // left open until the client goes away (or close() tears it down)
  res.end()
}

/** `content` carries the reply; `tail` ends it (finish, usage, [DONE] / message_delta, message_stop). */
interface SseEvents {
  content: string[]
  tail: string[]
  /** One text delta of `n` characters, for `endless`. */
  endless: (n: number) => string
}

/** Word-sized pieces, so text streams like a real reply. */
function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [text]
}

function fragments(text: string, size: number): string[] {
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out.length ? out : ['']
}

function argumentsText(call: FakeToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {})
}

function usageOf(reply: FakeReply, body: unknown): FakeUsage {
  if (reply.usage) return reply.usage
  const produced =
    (reply.reasoning ?? '').length + (reply.text ?? '').length + JSON.stringify(reply.toolCalls ?? []).length
  return { input: Math.ceil(JSON.stringify(body ?? '').length / 4), output: Math.max(1, Math.ceil(produced / 4)) }
}

interface OpenAiBody {
  model?: string
  reasoning?: unknown
  stream_options?: { include_usage?: boolean }
}

function openaiEvents(reply: FakeReply, body: OpenAiBody, n: number, issued: Issued): SseEvents {
  const base = {
    id: `chatcmpl-${n}`,
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: body?.model ?? 'fake',
  }
  const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`
  const delta = (d: object, finish: string | null = null) =>
    data({ ...base, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }] })
  const events = [delta({ role: 'assistant', content: '' })]
  // OpenRouter (its request carries `reasoning`) streams `reasoning` with typed `reasoning_details` pieces; the
  // last piece carries the signature (https://openrouter.ai/docs/use-cases/reasoning-tokens).
  const openrouter = body?.reasoning !== undefined
  const details =
    openrouter && reply.reasoning
      ? [
          {
            type: 'reasoning.text',
            text: reply.reasoning,
            format: 'anthropic-claude-v1',
            index: 0,
            signature: `or-sig-${n}`,
          },
        ]
      : undefined
  const reasoningPieces = reply.reasoning ? pieces(reply.reasoning) : []
  for (const [i, piece] of reasoningPieces.entries()) {
    if (!openrouter) events.push(delta({ reasoning_content: piece }))
    else {
      const last = i === reasoningPieces.length - 1
      const detail = {
        type: 'reasoning.text',
        text: piece,
        format: 'anthropic-claude-v1',
        index: 0,
        ...(last ? { signature: `or-sig-${n}` } : {}),
      }
      events.push(delta({ reasoning: piece, reasoning_details: [detail] }))
    }
  }
  for (const piece of pieces(reply.text ?? '')) if (reply.text) events.push(delta({ content: piece }))
  const calls = (reply.toolCalls ?? []).map((call, index) => {
    const id = call.id ?? `call_${n}_${index}`
    if (details) issued.openrouterDetails.set(id, details)
    return {
      start: delta({
        tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
      parts: fragments(argumentsText(call), reply.chunkSize ?? 4).map((part) =>
        delta({ tool_calls: [{ index, function: { arguments: part } }] }),
      ),
    }
  })
  if (reply.interleave) {
    for (const call of calls) events.push(call.start)
    for (let i = 0; calls.some((call) => i < call.parts.length); i++)
      for (const call of calls) if (i < call.parts.length) events.push(call.parts[i]!)
  } else {
    for (const call of calls) events.push(call.start, ...call.parts)
  }
  if (reply.streamError)
    return {
      content: [...events, data({ error: reply.streamError })],
      tail: [],
      endless: (k) => delta({ content: 'x'.repeat(k) }),
    }
  const tail = [delta({}, reply.finish ?? (calls.length ? 'tool_calls' : 'stop'))]
  if (body?.stream_options?.include_usage) {
    const usage = usageOf(reply, body)
    tail.push(
      data({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
          prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
        },
      }),
    )
  }
  tail.push('data: [DONE]\n\n')
  return { content: events, tail, endless: (k) => delta({ content: 'x'.repeat(k) }) }
}

function anthropicEvents(reply: FakeReply, body: unknown, n: number, issued: Issued): SseEvents {
  const event = (type: string, value: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...value })}\n\n`
  const usage = usageOf(reply, body)
  const model = (body as { model?: string })?.model ?? 'fake'
  const events = [
    event('message_start', {
      message: {
        id: `msg_${n}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.input - (usage.cacheRead ?? 0) - (usage.cacheWrite ?? 0),
          cache_read_input_tokens: usage.cacheRead ?? 0,
          cache_creation_input_tokens: usage.cacheWrite ?? 0,
          output_tokens: 1,
        },
      },
    }),
    event('ping', {}),
  ]
  let index = 0
  const thinking =
    reply.thinking ?? (reply.reasoning ? [{ thinking: reply.reasoning, signature: reply.signature ?? `sig-${n}` }] : [])
  const sent: AnthropicThinking[] = []
  for (const [i, block] of thinking.entries()) {
    if ('redacted' in block) {
      sent.push({ type: 'redacted_thinking', data: block.redacted })
      events.push(event('content_block_start', { index, content_block: sent.at(-1) }))
      events.push(event('content_block_stop', { index: index++ }))
      continue
    }
    const signature = block.signature ?? `sig-${n}-${i}`
    sent.push({ type: 'thinking', thinking: block.thinking, signature })
    events.push(
      event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }),
    )
    for (const piece of pieces(block.thinking))
      events.push(event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }))
    events.push(event('content_block_delta', { index, delta: { type: 'signature_delta', signature } }))
    events.push(event('content_block_stop', { index: index++ }))
  }
  if (reply.text) {
    events.push(event('content_block_start', { index, content_block: { type: 'text', text: '', citations: null } }))
    for (const piece of pieces(reply.text))
      events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }))
    events.push(event('content_block_stop', { index: index++ }))
  }
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    const id = call.id ?? `toolu_${n}_${i}`
    if (sent.length) issued.anthropicTurns.set(id, sent)
    events.push(
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id, name: call.name, input: {} },
      }),
    )
    for (const part of fragments(argumentsText(call), reply.chunkSize ?? 4))
      events.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }))
    events.push(event('content_block_stop', { index: index++ }))
  }
  for (const block of sent) if (block.type === 'thinking') issued.signatures.set(block.signature, block.thinking)
  const stop = reply.finish ?? (reply.toolCalls?.length ? 'tool_use' : 'end_turn')
  const tail = [
    event('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null, stop_details: null, container: null },
      usage: { output_tokens: usage.output },
    }),
    event('message_stop', {}),
  ]
  const endless = (k: number) =>
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'x'.repeat(k) } })
  return { content: events, tail, endless }
}

type AnthropicThinking =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }

/** What this server handed out, so a strict rule can tell a block sent back unchanged from one altered or dropped. */
class Issued {
  /** Anthropic: signature → the thinking text it signs. */
  readonly signatures = new Map<string, string>()
  /** Anthropic: tool_use id → the reasoning blocks of the reply that made it, in order. */
  readonly anthropicTurns = new Map<string, AnthropicThinking[]>()
  /** OpenRouter: tool call id → the reasoning_details of the reply that made it (folded). */
  readonly openrouterDetails = new Map<string, unknown[]>()
  /** Responses: reasoning item id → its encrypted_content. */
  readonly encrypted = new Map<string, string>()
  /** Responses: call_id → the reasoning item id of the reply that made the call. */
  readonly callReasoning = new Map<string, string>()
}

/**
 * The 400 the real API answers when a request breaks one of its documented rules, or undefined when it keeps them.
 * Only rules about what a client must send back are checked; they are the ones agents get wrong.
 */
function strictError(flavor: Flavor, body: any, issued: Issued): string | undefined {
  if (!body || typeof body !== 'object') return undefined
  if (flavor === 'openai') return deepseekRule(body) ?? chatImageRule(body) ?? openrouterRule(body, issued)
  if (flavor === 'responses') return responsesImageRule(body) ?? responsesRules(body, issued)
  return anthropicImageRule(body) ?? anthropicRules(body, issued)
}

/** The image type of base64 `data` by its magic number (what the real APIs check, not the claimed type). */
function sniffBase64(data: string): { type: string | undefined; bytes: number } | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data) || data.length % 4 !== 0) return undefined
  const bytes = Buffer.from(data, 'base64')
  const at = (magic: number[], offset = 0) => magic.every((byte, i) => bytes[offset + i] === byte)
  const text = (value: string) => [...value].map((c) => c.charCodeAt(0))
  const type = at([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    ? 'image/png'
    : at([0xff, 0xd8, 0xff])
      ? 'image/jpeg'
      : at(text('GIF87a')) || at(text('GIF89a'))
        ? 'image/gif'
        : at(text('RIFF')) && at(text('WEBP'), 8)
          ? 'image/webp'
          : undefined
  return { type, bytes: bytes.length }
}

const OPENAI_UNSUPPORTED_IMAGE =
  "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp']."

/**
 * An OpenAI image URL (chat `image_url.url`, Responses `input_image.image_url`): an http(s) URL, or a base64 data URL
 * of PNG, JPEG, WebP or non-animated GIF bytes up to 20 MB (https://platform.openai.com/docs/guides/images-vision,
 * "Image input requirements"; the messages as the API answers them).
 */
function openaiImageUrl(url: unknown, where: string): string | undefined {
  if (typeof url !== 'string') return `Invalid type for '${where}': expected a string, but got ${typeof url} instead.`
  if (/^https?:\/\//.test(url)) return undefined
  const match = /^data:(image\/(?:png|jpeg|gif|webp));base64,(.*)$/s.exec(url)
  if (!match)
    return `Invalid image URL: '${where}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value that is not one.`
  const sniffed = sniffBase64(match[2]!)
  if (!sniffed?.type || sniffed.bytes > 20 * 1024 * 1024) return OPENAI_UNSUPPORTED_IMAGE
  return undefined
}

/**
 * Chat completions (https://platform.openai.com/docs/api-reference/chat/create, `messages`; the images guide
 * above): an `image_url` part belongs to a `user` message only, with `image_url: { url, detail? }` and `detail` one
 * of low, high, auto. DeepSeek's models take text only (https://api-docs.deepseek.com/api/create-chat-completion:
 * user content parts are `text`), and its API refuses the part as an unknown variant.
 */
function chatImageRule(body: any): string | undefined {
  for (const [i, message] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
    if (!Array.isArray(message?.content)) continue
    for (const [j, part] of message.content.entries()) {
      if (part?.type !== 'image_url') continue
      if (typeof body.model === 'string' && body.model.startsWith('deepseek-'))
        return `Failed to deserialize the JSON body into the target type: messages[${i}]: unknown variant \`image_url\`, expected \`text\``
      if (message.role !== 'user')
        return `Image URLs are only allowed for messages with role 'user', but this message with role '${message.role}' contains an image URL.`
      const detail = part.image_url?.detail
      if (detail !== undefined && !['low', 'high', 'auto'].includes(detail))
        return `Invalid value: '${detail}'. Supported values are: 'low', 'high', and 'auto'.`
      const broken = openaiImageUrl(part.image_url?.url, `messages[${i}].content[${j}].image_url.url`)
      if (broken) return broken
    }
  }
  return undefined
}

/**
 * Responses (https://platform.openai.com/docs/api-reference/responses/create, `input_image`: `image_url` or
 * `file_id`, `detail` low, high or auto; the images guide above): an image rides a `user` message's content.
 */
function responsesImageRule(body: any): string | undefined {
  for (const [i, item] of (Array.isArray(body.input) ? body.input : []).entries()) {
    if (!Array.isArray(item?.content)) continue
    for (const [j, part] of item.content.entries()) {
      if (part?.type !== 'input_image') continue
      if (item.role !== 'user')
        return `Invalid value: 'input_image'. Supported values are: 'output_text' and 'refusal'. (input[${i}].content[${j}])`
      if (part.detail !== undefined && !['low', 'high', 'auto'].includes(part.detail))
        return `Invalid value: '${part.detail}'. Supported values are: 'low', 'high', and 'auto'.`
      if (part.file_id === undefined) {
        const broken = openaiImageUrl(part.image_url, `input[${i}].content[${j}].image_url`)
        if (broken) return broken
      }
    }
  }
  return undefined
}

/**
 * Anthropic Messages (https://platform.claude.com/docs/en/build-with-claude/vision, "Base64-encoded image example"
 * and "FAQ": JPEG, PNG, GIF and WebP, at most 5 MB per image over the API; the messages as the API answers them): an
 * `image` block, in a user message or a `tool_result`'s content, has `source: { type: 'base64', media_type, data }`
 * (or `url`), and the bytes must be of the type it claims.
 */
function anthropicImageRule(body: any): string | undefined {
  for (const [i, message] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
    if (!Array.isArray(message?.content)) continue
    const blocks: [string, any][] = []
    for (const [j, block] of message.content.entries()) {
      blocks.push([`messages.${i}.content.${j}`, block])
      if (block?.type === 'tool_result' && Array.isArray(block.content))
        for (const [k, inner] of block.content.entries())
          blocks.push([`messages.${i}.content.${j}.content.${k}`, inner])
    }
    for (const [where, block] of blocks) {
      if (block?.type !== 'image') continue
      if (message.role !== 'user')
        return `${where}.type: Input tag 'image' found using 'type' does not match any of the expected tags: 'text', 'thinking', 'redacted_thinking', 'tool_use'`
      const source = block.source
      if (source?.type === 'url' && typeof source.url === 'string') continue
      if (source?.type !== 'base64')
        return `${where}.image.source: Input tag '${source?.type}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`
      if (!['image/jpeg', 'image/png', 'image/gif', 'image/webp'].includes(source.media_type))
        return `${where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`
      const sniffed = typeof source.data === 'string' ? sniffBase64(source.data) : undefined
      if (!sniffed) return `${where}.image.source.base64.data: The image data is not valid base64`
      if (source.data.length > 5 * 1024 * 1024)
        return `${where}.image.source.base64: image exceeds 5 MB maximum: ${source.data.length} bytes > ${5 * 1024 * 1024} bytes`
      if (sniffed.type !== source.media_type)
        return `${where}.image.source.base64.data: The image was specified using the ${source.media_type} media type, but the image appears to be a ${sniffed.type ?? 'non-image'} image`
    }
  }
  return undefined
}

/**
 * DeepSeek, thinking mode (on by default for V4): an assistant message that made tool calls must carry its
 * `reasoning_content` in every later request, else 400 with exactly this message
 * (https://api-docs.deepseek.com/guides/thinking_mode, "Tool Calls"; the message as reported in
 * anomalyco/opencode#24722 and the-open-agent/openagent#2206). Applies to DeepSeek's own ids (`deepseek-…`, no vendor
 * prefix, so not OpenRouter's `deepseek/…`).
 */
function deepseekRule(body: any): string | undefined {
  if (typeof body.model !== 'string' || !body.model.startsWith('deepseek-')) return undefined
  if (body.thinking?.type === 'disabled') return undefined
  for (const message of body.messages ?? [])
    if (message?.role === 'assistant' && message.tool_calls?.length && typeof message.reasoning_content !== 'string')
      return 'The `reasoning_content` in the thinking mode must be passed back to the API.'
  return undefined
}

/**
 * OpenRouter: a tool-calling assistant message must carry the `reasoning_details` it came with, unchanged, or a
 * thinking model behind it (Claude, Gemini) rejects the history
 * (https://openrouter.ai/docs/use-cases/reasoning-tokens, "Preserving reasoning blocks").
 */
function openrouterRule(body: any, issued: Issued): string | undefined {
  if (body.reasoning === undefined) return undefined
  for (const message of body.messages ?? []) {
    const id = message?.role === 'assistant' ? message.tool_calls?.[0]?.id : undefined
    const expected = id ? issued.openrouterDetails.get(id) : undefined
    if (expected && JSON.stringify(message.reasoning_details) !== JSON.stringify(expected))
      return 'Provider returned error: messages: each assistant message with tool_use must keep its reasoning_details (thinking block and signature) unchanged'
  }
  return undefined
}

/**
 * Anthropic Messages (https://platform.claude.com/docs/en/build-with-claude/extended-thinking, "Preserving thinking
 * blocks"; https://platform.claude.com/docs/build-with-claude/preserved-thinking): a thinking block sent back must
 * carry the signature it came with, unchanged with its text; in the last assistant turn (the tool-use loop in
 * progress) the reply's thinking and redacted_thinking blocks must all come back, unchanged, in order, before
 * its tool_use blocks.
 */
function anthropicRules(body: any, issued: Issued): string | undefined {
  const messages: any[] = Array.isArray(body.messages) ? body.messages : []
  for (const [i, message] of messages.entries()) {
    if (message?.role !== 'assistant' || !Array.isArray(message.content)) continue
    for (const [j, block] of message.content.entries()) {
      if (block?.type !== 'thinking') continue
      if (typeof block.signature !== 'string' || !block.signature)
        return `messages.${i}.content.${j}.thinking.signature: Field required`
      if (issued.signatures.get(block.signature) !== block.thinking)
        return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`
    }
  }
  const last = messages.findLastIndex((message) => message?.role === 'assistant')
  const turn = messages[last]
  if (!turn || !Array.isArray(turn.content)) return undefined
  const toolUse = turn.content.find((block: any) => block?.type === 'tool_use')
  const expected = toolUse ? issued.anthropicTurns.get(toolUse.id) : undefined
  if (!expected) return undefined
  const got = turn.content.slice(0, expected.length)
  if (JSON.stringify(got) !== JSON.stringify(expected)) {
    const j = got.findIndex((block: any, k: number) => JSON.stringify(block) !== JSON.stringify(expected[k]))
    const found = got[j]?.type ?? 'nothing'
    return `messages.${last}.content.${j}.type: Expected \`${expected[j]!.type}\`, but found \`${found}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns.`
  }
  return undefined
}

/**
 * OpenAI Responses, stateless (`store: false`; https://platform.openai.com/docs/guides/reasoning, "Keeping reasoning
 * items in context"; https://platform.openai.com/docs/guides/function-calling): a `function_call_output` needs its
 * `function_call` earlier in `input`; a `function_call` made after a reasoning item needs that item (with the
 * `encrypted_content` it came with) before it.
 */
function responsesRules(body: any, issued: Issued): string | undefined {
  const input: any[] = Array.isArray(body.input) ? body.input : []
  const calls = new Set<string>()
  const reasoning = new Map<string, unknown>()
  for (const item of input) {
    if (item?.type === 'reasoning') {
      const known = issued.encrypted.get(item.id)
      if (known !== undefined && item.encrypted_content !== known)
        return `The encrypted content for item ${item.id} could not be verified.`
      reasoning.set(item.id, item.encrypted_content)
    } else if (item?.type === 'function_call') {
      const needed = issued.callReasoning.get(item.call_id)
      if (needed && !reasoning.has(needed))
        return `Item '${item.call_id}' of type 'function_call' was provided without its required 'reasoning' item: '${needed}'.`
      calls.add(item.call_id)
    } else if (item?.type === 'function_call_output' && !calls.has(item.call_id)) {
      return `No tool call found for function call output with call_id ${item.call_id}.`
    }
  }
  return undefined
}

interface ResponsesBody {
  model?: string
  include?: string[]
}

/** The Responses streaming events (https://platform.openai.com/docs/api-reference/responses-streaming). */
function responsesEvents(reply: FakeReply, body: ResponsesBody, n: number, issued: Issued): SseEvents {
  let sequence = 0
  const event = (type: string, value: object) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...value })}\n\n`
  const model = body?.model ?? 'fake'
  const response = { id: `resp_${n}`, object: 'response', created_at: 1_700_000_000, model, output: [] as unknown[] }
  const events = [
    event('response.created', { response: { ...response, status: 'in_progress' } }),
    event('response.in_progress', { response: { ...response, status: 'in_progress' } }),
  ]
  const output: unknown[] = []
  let index = 0
  let reasoningId: string | undefined
  if (reply.reasoning) {
    const id = `rs_${n}`
    reasoningId = id
    events.push(
      event('response.output_item.added', { output_index: index, item: { type: 'reasoning', id, summary: [] } }),
    )
    const part = { type: 'summary_text', text: '' }
    events.push(
      event('response.reasoning_summary_part.added', { item_id: id, output_index: index, summary_index: 0, part }),
    )
    for (const piece of pieces(reply.reasoning))
      events.push(
        event('response.reasoning_summary_text.delta', {
          item_id: id,
          output_index: index,
          summary_index: 0,
          delta: piece,
        }),
      )
    events.push(
      event('response.reasoning_summary_text.done', {
        item_id: id,
        output_index: index,
        summary_index: 0,
        text: reply.reasoning,
      }),
    )
    const item: Record<string, unknown> = {
      type: 'reasoning',
      id,
      summary: [{ type: 'summary_text', text: reply.reasoning }],
    }
    if (body?.include?.includes('reasoning.encrypted_content')) {
      item.encrypted_content = `enc-${n}-${Buffer.from(reply.reasoning).toString('base64')}`
      issued.encrypted.set(id, item.encrypted_content as string)
    }
    output.push(item)
    events.push(event('response.output_item.done', { output_index: index++, item }))
  }
  if (reply.text) {
    const id = `msg_${n}`
    const item = { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] as unknown[] }
    events.push(event('response.output_item.added', { output_index: index, item }))
    const part = { type: 'output_text', text: '', annotations: [] }
    events.push(event('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part }))
    for (const piece of pieces(reply.text))
      events.push(
        event('response.output_text.delta', {
          item_id: id,
          output_index: index,
          content_index: 0,
          delta: piece,
          logprobs: [],
        }),
      )
    events.push(
      event('response.output_text.done', {
        item_id: id,
        output_index: index,
        content_index: 0,
        text: reply.text,
        logprobs: [],
      }),
    )
    const done = { ...item, status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] }
    events.push(
      event('response.content_part.done', {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: done.content[0],
      }),
    )
    output.push(done)
    events.push(event('response.output_item.done', { output_index: index++, item: done }))
  }
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    const id = `fc_${n}_${i}`
    const callId = call.id ?? `call_${n}_${i}`
    if (reasoningId) issued.callReasoning.set(callId, reasoningId)
    const item = { type: 'function_call', id, call_id: callId, name: call.name, arguments: '', status: 'in_progress' }
    events.push(event('response.output_item.added', { output_index: index, item }))
    const args = argumentsText(call)
    for (const part of fragments(args, reply.chunkSize ?? 4))
      events.push(event('response.function_call_arguments.delta', { item_id: id, output_index: index, delta: part }))
    events.push(event('response.function_call_arguments.done', { item_id: id, output_index: index, arguments: args }))
    const done = { ...item, arguments: args, status: 'completed' }
    output.push(done)
    events.push(event('response.output_item.done', { output_index: index++, item: done }))
  }
  const usage = usageOf(reply, body)
  const cut = reply.finish === 'length' || reply.finish === 'max_output_tokens'
  const final = {
    ...response,
    status: cut ? 'incomplete' : 'completed',
    ...(cut ? { incomplete_details: { reason: 'max_output_tokens' } } : {}),
    output,
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: reply.reasoning ? Math.ceil(reply.reasoning.length / 4) : 0 },
      total_tokens: usage.input + usage.output,
    },
  }
  // `endless`: text deltas without end, as a stream that never finishes would send them.
  const endless = (k: number) =>
    event('response.output_text.delta', {
      item_id: 'msg_endless',
      output_index: 0,
      content_index: 0,
      delta: 'x'.repeat(k),
    })
  return {
    content: events,
    tail: [event(cut ? 'response.incomplete' : 'response.completed', { response: final })],
    endless,
  }
}
