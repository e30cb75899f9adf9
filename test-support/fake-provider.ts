/**
 * A fake model provider for tests: a node:http server on 127.0.0.1 (port 0) that streams real SSE in the
 * OpenAI chat-completions shape (`POST /v1/chat/completions`) and the Anthropic Messages shape
 * (`POST /v1/messages`), so the real SDK-based adapters can be exercised without the network.
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
  /** Streamed in word-sized deltas. */
  text?: string
  /** Streamed after the text: a start delta (id + name), then the arguments in `chunkSize`-character fragments. */
  toolCalls?: FakeToolCall[]
  /** Characters per tool-argument fragment (default 4). */
  chunkSize?: number
  /** OpenAI only: send all tool-call starts first, then interleave their argument fragments round-robin. */
  interleave?: boolean
  /** Token usage to report (default: rough estimates). */
  usage?: { input: number; output: number; cacheRead?: number }
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

interface RecordedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** Parsed JSON (the raw text when it is not JSON). */
  body: any
  /** When the request line arrived (epoch ms), for start-up benchmarks. */
  at: number
}

export interface FakeProvider {
  /** `http://127.0.0.1:<port>` (no trailing slash, no /v1). */
  url: string
  requests: RecordedRequest[]
  replies: FakeReply[]
  close(): Promise<void>
}

export async function startFakeProvider(script: FakeReply[] = []): Promise<FakeProvider> {
  const replies = [...script]
  const requests: RecordedRequest[] = []
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
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body, at })
      const flavor =
        req.method === 'POST' && path === '/v1/chat/completions'
          ? 'openai'
          : req.method === 'POST' && path === '/v1/messages'
            ? 'anthropic'
            : undefined
      if (!flavor) return sendError(res, 'openai', 404, `fake provider: no route for ${req.method} ${path}`)
      const reply = replies.shift()
      const n = ++served
      if (!reply) return sendError(res, flavor, 400, `fake provider: script exhausted (request ${n})`)
      if (reply.status)
        return sendError(res, flavor, reply.status, reply.error ?? `fake provider: status ${reply.status}`)
      if (reply.stallBeforeHeaders) return // the request is read; no byte of an answer follows
      const events = flavor === 'openai' ? openaiEvents(reply, body as OpenAiBody, n) : anthropicEvents(reply, body, n)
      void stream(res, events, reply)
    })
  })
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    replies,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      }),
  }
}

function sendError(res: ServerResponse, flavor: 'openai' | 'anthropic', status: number, message: string): void {
  const body =
    flavor === 'openai'
      ? {
          error: {
            message,
            type:
              status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : 'invalid_request_error',
            code: null,
          },
        }
      : { type: 'error', error: { type: anthropicErrorType(status), message } }
  res.writeHead(status, { 'content-type': 'application/json' })
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
  const all = reply.hang ? events.content : [...events.content, ...events.tail]
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

function usageOf(reply: FakeReply, body: unknown): { input: number; output: number; cacheRead?: number } {
  if (reply.usage) return reply.usage
  const produced =
    (reply.reasoning ?? '').length + (reply.text ?? '').length + JSON.stringify(reply.toolCalls ?? []).length
  return { input: Math.ceil(JSON.stringify(body ?? '').length / 4), output: Math.max(1, Math.ceil(produced / 4)) }
}

interface OpenAiBody {
  model?: string
  stream_options?: { include_usage?: boolean }
}

function openaiEvents(reply: FakeReply, body: OpenAiBody, n: number): SseEvents {
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
  for (const piece of pieces(reply.reasoning ?? ''))
    if (reply.reasoning) events.push(delta({ reasoning_content: piece }))
  for (const piece of pieces(reply.text ?? '')) if (reply.text) events.push(delta({ content: piece }))
  const calls = (reply.toolCalls ?? []).map((call, index) => ({
    start: delta({
      tool_calls: [
        { index, id: call.id ?? `call_${n}_${index}`, type: 'function', function: { name: call.name, arguments: '' } },
      ],
    }),
    parts: fragments(argumentsText(call), reply.chunkSize ?? 4).map((part) =>
      delta({ tool_calls: [{ index, function: { arguments: part } }] }),
    ),
  }))
  if (reply.interleave) {
    for (const call of calls) events.push(call.start)
    for (let i = 0; calls.some((call) => i < call.parts.length); i++)
      for (const call of calls) if (i < call.parts.length) events.push(call.parts[i]!)
  } else {
    for (const call of calls) events.push(call.start, ...call.parts)
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
  return { content: events, tail }
}

function anthropicEvents(reply: FakeReply, body: unknown, n: number): SseEvents {
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
          input_tokens: usage.input - (usage.cacheRead ?? 0),
          cache_read_input_tokens: usage.cacheRead ?? 0,
          cache_creation_input_tokens: 0,
          output_tokens: 1,
        },
      },
    }),
    event('ping', {}),
  ]
  let index = 0
  if (reply.reasoning) {
    events.push(
      event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }),
    )
    for (const piece of pieces(reply.reasoning))
      events.push(event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }))
    events.push(
      event('content_block_delta', {
        index,
        delta: { type: 'signature_delta', signature: reply.signature ?? `sig-${n}` },
      }),
    )
    events.push(event('content_block_stop', { index: index++ }))
  }
  if (reply.text) {
    events.push(event('content_block_start', { index, content_block: { type: 'text', text: '', citations: null } }))
    for (const piece of pieces(reply.text))
      events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }))
    events.push(event('content_block_stop', { index: index++ }))
  }
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    events.push(
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: call.id ?? `toolu_${n}_${i}`, name: call.name, input: {} },
      }),
    )
    for (const part of fragments(argumentsText(call), reply.chunkSize ?? 4))
      events.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }))
    events.push(event('content_block_stop', { index: index++ }))
  }
  const stop = reply.finish ?? (reply.toolCalls?.length ? 'tool_use' : 'end_turn')
  const tail = [
    event('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null, stop_details: null, container: null },
      usage: { output_tokens: usage.output },
    }),
    event('message_stop', {}),
  ]
  return { content: events, tail }
}
