import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import { createAnthropic } from '../src/anthropic-provider.ts'
import type { Message } from '@keel/session/messages'
import { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from '../src/index.ts'
import { assemble, collect, failure, hello } from './stream-support.ts'

// A model the SDK does not flag as deprecated (it warns on stdout for those).
const MODEL = 'claude-sonnet-5'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

async function serve(...replies: FakeReply[]): Promise<FakeProvider> {
  fake = await startFakeProvider(replies)
  return fake
}

function adapter(env: Record<string, string> = { ANTHROPIC_API_KEY: 'sk-ant-test' }, baseUrl = fake!.url): LlmAdapter {
  return createAnthropic(MODEL, { baseUrl, env, cwd: process.cwd() })
}

describe('Anthropic adapter against the fake server', () => {
  it('streams text; the system prompt goes in `system` with a cache breakpoint; max_tokens from the catalog; the SDK sends the key', async () => {
    await serve({ text: 'Hello there, how are you today?' })
    const chunks = await collect(adapter().stream(hello, new AbortController().signal))
    expect(chunks.filter((chunk) => chunk.type === 'text-delta').length).toBeGreaterThan(3)
    const assembled = assemble(chunks)
    expect(assembled.message()).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Hello there, how are you today?' }],
    })
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: 'stop' })

    const [request] = fake!.requests
    expect(request!.path).toBe('/v1/messages')
    expect(request!.body).toEqual({
      model: MODEL,
      // claude-sonnet-5 has no output limit in the snapshot: Claude's stated floor (catalog.ts).
      max_tokens: 32_000,
      stream: true,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    })
    const auth = `${request!.headers.authorization ?? ''} ${request!.headers['x-api-key'] ?? ''}`
    expect(auth).toContain('sk-ant-test')
  })

  it('accepts a --base-url that ends in /v1', async () => {
    await serve({ text: 'ok' })
    await collect(adapter(undefined, `${fake!.url}/v1/`).stream(hello, new AbortController().signal))
    expect(fake!.requests[0]!.path).toBe('/v1/messages')
  })

  it('turns tool_use blocks with input_json_delta fragments into tool-call-start/delta, for two calls in one reply', async () => {
    await serve({
      text: 'Two things.',
      chunkSize: 3,
      toolCalls: [
        { id: 'toolu_1', name: 'read', arguments: { path: 'src/index.ts' } },
        { id: 'toolu_2', name: 'bash', arguments: { command: 'npm test' } },
      ],
    })
    const chunks = await collect(adapter().stream(hello, new AbortController().signal))
    expect(chunks.filter((chunk) => chunk.type === 'tool-call-start')).toEqual([
      { type: 'tool-call-start', index: 0, id: 'toolu_1', name: 'read' },
      { type: 'tool-call-start', index: 1, id: 'toolu_2', name: 'bash' },
    ])
    expect(chunks.filter((chunk) => chunk.type === 'tool-call-delta').length).toBeGreaterThan(8)
    const assembled = assemble(chunks)
    expect(assembled.message().content).toEqual([
      { type: 'text', text: 'Two things.' },
      { type: 'tool-call', id: 'toolu_1', name: 'read', arguments: '{"path":"src/index.ts"}' },
      { type: 'tool-call', id: 'toolu_2', name: 'bash', arguments: '{"command":"npm test"}' },
    ])
    expect(assembled.finish).toBe('tool-calls')
  })

  it('gives a tool call without input an empty object of arguments', async () => {
    await serve({ toolCalls: [{ id: 'toolu_1', name: 'list', arguments: '' }] })
    const chunks = await collect(adapter().stream(hello, new AbortController().signal))
    expect(assemble(chunks).message().content).toEqual([
      { type: 'tool-call', id: 'toolu_1', name: 'list', arguments: '{}' },
    ])
  })

  it('keeps adjacent thinking and redacted_thinking blocks apart and sends them back byte for byte', async () => {
    const thinking = [
      { thinking: 'First, the tests.', signature: 'sig-A' },
      { redacted: 'EmwKAhgBEgy-opaque' },
      { thinking: 'Then the build.', signature: 'sig-B' },
    ]
    await serve(
      { thinking, toolCalls: [{ id: 'toolu_1', name: 'bash', arguments: { command: 'ls' } }] },
      { text: 'ok' },
    )
    const first = assemble(await collect(adapter().stream(hello, new AbortController().signal))).message()
    expect(first.content.slice(0, 3)).toEqual([
      { type: 'reasoning', text: 'First, the tests.', signature: 'sig-A', origin: 'anthropic' },
      { type: 'reasoning', text: '', data: 'EmwKAhgBEgy-opaque', origin: 'anthropic' },
      { type: 'reasoning', text: 'Then the build.', signature: 'sig-B', origin: 'anthropic' },
    ])
    const history: Message[] = [
      ...hello.messages,
      first,
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'toolu_1', content: [], isError: false }] },
    ]
    // The strict fake answers 400 unless every block comes back unchanged and in order.
    await collect(adapter().stream({ ...hello, messages: history }, new AbortController().signal))
    expect(fake!.requests[1]!.body.messages[1].content.slice(0, 3)).toEqual([
      { type: 'thinking', thinking: 'First, the tests.', signature: 'sig-A' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy-opaque' },
      { type: 'thinking', thinking: 'Then the build.', signature: 'sig-B' },
    ])
  })

  it('the strict fake answers as Anthropic does to a changed signature and to a filtered redacted_thinking block', async () => {
    const reply = {
      thinking: [{ thinking: 'Plan.', signature: 'sig-P' }, { redacted: 'opaque' }],
      toolCalls: [{ id: 'toolu_9', name: 'bash', arguments: {} }],
    }
    await serve(reply)
    const first = assemble(await collect(adapter().stream(hello, new AbortController().signal))).message()
    const result: Message = {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'toolu_9', content: [], isError: false }],
    }
    const send = (assistant: Message) =>
      failure(
        adapter().stream({ ...hello, messages: [...hello.messages, assistant, result] }, new AbortController().signal),
      )
    const changed = structuredClone(first)
    ;(changed.content[0] as { text: string }).text = 'Plan, edited.'
    const invalid = await send(changed)
    expect(invalid.kind).toBe('bad-request')
    expect(invalid.message).toContain('Invalid `signature` in `thinking` block')
    expect(invalid.message).toContain(`for ${MODEL} at ${fake!.url}/v1/messages`)
    const filtered = { ...first, content: first.content.filter((block) => !(block.type === 'reasoning' && block.data)) }
    expect((await send(filtered)).message).toContain('Expected `redacted_thinking`, but found `tool_use`')
  })

  it('turns thinking blocks into reasoning deltas and keeps the signature', async () => {
    await serve({ reasoning: 'Let me think about this.', signature: 'EqQBCkgIARABGAIiQ', text: 'Answer.' })
    const chunks = await collect(adapter().stream(hello, new AbortController().signal))
    expect(chunks.filter((chunk) => chunk.type === 'reasoning-delta').length).toBeGreaterThan(3)
    expect(assemble(chunks).message().content).toEqual([
      { type: 'reasoning', text: 'Let me think about this.', signature: 'EqQBCkgIARABGAIiQ', origin: 'anthropic' },
      { type: 'text', text: 'Answer.' },
    ])
  })

  it('reports usage from message_start and message_delta; input counts cached tokens', async () => {
    await serve({ text: 'ok', usage: { input: 5000, output: 42, cacheRead: 4096 } })
    const chunks = await collect(adapter().stream(hello, new AbortController().signal))
    expect(chunks.find((chunk) => chunk.type === 'usage')).toEqual({
      type: 'usage',
      usage: { input: 5000, output: 42, cacheRead: 4096 },
    })
  })

  it('maps max_tokens to max-tokens', async () => {
    await serve({ text: 'cut', finish: 'max_tokens' })
    const chunks = await collect(adapter().stream(hello, new AbortController().signal))
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: 'max-tokens' })
  })

  it('maps history: signed thinking goes back, unsigned reasoning does not; consecutive tool results become one user turn', async () => {
    // Hand-made signatures the fake never issued: lenient, the strict rules have their own tests below.
    fake = await startFakeProvider([{ text: 'done' }], { lenient: true })
    const messages: Message[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'signed thought', signature: 'sig-1' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool-call', id: 'toolu_1', name: 'bash', arguments: '{"command":"ls"}' },
          { type: 'tool-call', id: 'toolu_2', name: 'bash', arguments: '{"command":"pwd"' },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'toolu_1', content: [{ type: 'text', text: 'a.txt' }], isError: false },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'toolu_2',
            content: [{ type: 'text', text: 'Error: invalid JSON arguments' }],
            isError: true,
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'and then?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'UNSIGNED-FROM-ANOTHER-PROVIDER' },
          { type: 'text', text: 'Then nothing.' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'ok' }] },
    ]
    const request: LlmRequest = {
      system: 'sys',
      messages,
      tools: [
        {
          name: 'bash',
          description: 'Run a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      ],
      maxTokens: 2048,
    }
    await collect(adapter().stream(request, new AbortController().signal))
    const body = fake!.requests[0]!.body
    expect(JSON.stringify(body)).not.toContain('UNSIGNED')
    expect(body.max_tokens).toBe(2048)
    // Cache breakpoints: the last tool, the system prompt, the last block of the latest message (anthropic-cache.ts).
    expect(body.system).toEqual([{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }])
    expect(body.tools).toEqual([
      {
        name: 'bash',
        description: 'Run a command',
        input_schema: { type: 'object', properties: { command: { type: 'string' } } },
        cache_control: { type: 'ephemeral' },
      },
    ])
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'signed thought', signature: 'sig-1' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
          { type: 'tool_use', id: 'toolu_2', name: 'bash', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a.txt' }] },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            content: [{ type: 'text', text: 'Error: invalid JSON arguments' }],
            is_error: true,
          },
          { type: 'text', text: 'and then?' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Then nothing.' }] },
      { role: 'user', content: [{ type: 'text', text: 'ok', cache_control: { type: 'ephemeral' } }] },
    ])
  })

  it('turns 401 into a one-line auth error naming ANTHROPIC_API_KEY', async () => {
    await serve({ status: 401, error: 'invalid x-api-key' })
    const error = await failure(adapter().stream(hello, new AbortController().signal))
    expect(error.kind).toBe('auth')
    expect(error.message).toBe('anthropic rejected the API key (401: invalid x-api-key); check ANTHROPIC_API_KEY')
    expect(fake!.requests).toHaveLength(1)
  })

  it('maps 429, 529 and 400 to rate-limit, server and bad-request without SDK retries', async () => {
    await serve(
      { status: 429, error: 'slow down' },
      { status: 529, error: 'Overloaded' },
      { status: 400, error: 'messages.0.content: empty' },
    )
    const errors: LlmError[] = []
    for (let i = 0; i < 3; i++) errors.push(await failure(adapter().stream(hello, new AbortController().signal)))
    expect(errors.map((error) => error.kind)).toEqual(['rate-limit', 'server', 'bad-request'])
    expect(errors[2]!.message).toContain('messages.0.content: empty')
    expect(fake!.requests).toHaveLength(3)
  })

  it('reports a mid-stream disconnect as a network error', async () => {
    await serve({ text: 'one two three four five six seven', disconnectAfter: 6 })
    const seen: StreamChunk[] = []
    const error = await failure(adapter().stream(hello, new AbortController().signal), seen)
    expect(error.kind).toBe('network')
    expect(seen.some((chunk) => chunk.type === 'text-delta')).toBe(true)
  })

  it('stops with an aborted error when the signal fires mid-stream', async () => {
    await serve({ text: 'streaming along', hang: true })
    const controller = new AbortController()
    const stream = adapter().stream(hello, controller.signal)
    const error = await failure(
      (async function* () {
        for await (const chunk of stream) {
          yield chunk
          controller.abort()
        }
      })(),
    )
    expect(error.kind).toBe('aborted')
  })

  it('fails with a one-line config error when ANTHROPIC_API_KEY is missing', () => {
    let error: unknown
    try {
      createAnthropic('claude-sonnet-5', { env: {}, cwd: '.' })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(LlmError)
    expect((error as LlmError).kind).toBe('config')
    expect((error as LlmError).message).toBe(
      'ANTHROPIC_API_KEY is not set (needed for --model anthropic/claude-sonnet-5)',
    )
  })

  it("takes a Claude model's 1M context window from the catalog", () => {
    expect(createAnthropic('claude-opus-5', { env: { ANTHROPIC_API_KEY: 'k' }, cwd: '.' }).contextWindow).toBe(
      1_000_000,
    )
  })
})
