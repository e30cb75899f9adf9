import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import { createOpenAiCompatible } from '../src/openai-provider.ts'
import { toChatMessages } from '../src/openai.ts'
import type { Message } from '@keel/session/messages'
import { LlmError, type LlmAdapter, type LlmRequest, type ReasoningSettings, type StreamChunk } from '../src/index.ts'
import { assemble, collect, failure, hello } from './stream-support.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

async function serve(...replies: FakeReply[]): Promise<FakeProvider> {
  fake = await startFakeProvider(replies)
  return fake
}

function adapter(provider: string, model: string, env: Record<string, string> = {}): LlmAdapter {
  return createOpenAiCompatible(provider, model, { baseUrl: `${fake!.url}/v1`, env, cwd: process.cwd() })
}

describe('OpenAI-compatible adapter against the fake server', () => {
  it('streams text in several deltas, then usage, then finish', async () => {
    await serve({ text: 'Hello there, how are you today?' })
    const chunks = await collect(
      adapter('openai-compatible', 'local-model').stream(hello, new AbortController().signal),
    )
    const texts = chunks.filter((chunk) => chunk.type === 'text-delta')
    expect(texts.length).toBeGreaterThan(3)
    const message = assemble(chunks)
    expect(message.message()).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Hello there, how are you today?' }],
    })
    expect(message.finish).toBe('stop')
    expect(chunks.at(-2)?.type).toBe('usage')
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: 'stop' })

    const [request] = fake!.requests
    expect(request!.path).toBe('/v1/chat/completions')
    expect(request!.body).toMatchObject({ model: 'local-model', stream: true, stream_options: { include_usage: true } })
    expect(request!.body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'hi' },
    ])
    expect(request!.body.tools).toBeUndefined()
    // openai-compatible without KEEL_API_KEY sends no Authorization header at all.
    expect(request!.headers.authorization).toBeUndefined()
  })

  it('sends KEEL_API_KEY as a bearer token for openai-compatible when it is set', async () => {
    await serve({ text: 'ok' })
    await collect(
      adapter('openai-compatible', 'x', { KEEL_API_KEY: 'local-secret' }).stream(hello, new AbortController().signal),
    )
    expect(fake!.requests[0]!.headers.authorization).toBe('Bearer local-secret')
  })

  it('accumulates one tool call whose arguments arrive in many fragments', async () => {
    const args = { command: 'ls -la src', timeout: 30 }
    await serve({ toolCalls: [{ id: 'call_a', name: 'bash', arguments: args }], chunkSize: 3 })
    const chunks = await collect(adapter('openai-compatible', 'x').stream(hello, new AbortController().signal))
    const starts = chunks.filter((chunk) => chunk.type === 'tool-call-start')
    const deltas = chunks.filter((chunk) => chunk.type === 'tool-call-delta')
    expect(starts).toEqual([{ type: 'tool-call-start', index: 0, id: 'call_a', name: 'bash' }])
    expect(deltas.length).toBeGreaterThan(8)
    expect(chunks.indexOf(starts[0]!)).toBeLessThan(chunks.indexOf(deltas[0]!))
    const assembled = assemble(chunks)
    expect(assembled.message().content).toEqual([
      { type: 'tool-call', id: 'call_a', name: 'bash', arguments: JSON.stringify(args) },
    ])
    expect(assembled.finish).toBe('tool-calls')
  })

  it('keeps two parallel tool calls apart even when their fragments interleave', async () => {
    await serve({
      text: 'Looking.',
      interleave: true,
      chunkSize: 2,
      toolCalls: [
        { id: 'call_1', name: 'read', arguments: { path: 'a.txt' } },
        { id: 'call_2', name: 'bash', arguments: { command: 'echo "two"' } },
      ],
    })
    const chunks = await collect(adapter('openai-compatible', 'x').stream(hello, new AbortController().signal))
    const assembled = assemble(chunks)
    expect(assembled.message().content).toEqual([
      { type: 'text', text: 'Looking.' },
      { type: 'tool-call', id: 'call_1', name: 'read', arguments: '{"path":"a.txt"}' },
      { type: 'tool-call', id: 'call_2', name: 'bash', arguments: '{"command":"echo \\"two\\""}' },
    ])
    expect(
      chunks.filter((chunk) => chunk.type === 'tool-call-start').map((chunk) => (chunk as { index: number }).index),
    ).toEqual([0, 1])
    expect(assembled.finish).toBe('tool-calls')
  })

  it('reports usage, including cached prompt tokens', async () => {
    await serve({ text: 'ok', usage: { input: 1200, output: 35, cacheRead: 1024 } })
    const chunks = await collect(adapter('openai-compatible', 'x').stream(hello, new AbortController().signal))
    expect(chunks.find((chunk) => chunk.type === 'usage')).toEqual({
      type: 'usage',
      usage: { input: 1200, output: 35, cacheRead: 1024 },
    })
  })

  it('maps length to max-tokens', async () => {
    await serve({ text: 'cut', finish: 'length' })
    const chunks = await collect(adapter('openai-compatible', 'x').stream(hello, new AbortController().signal))
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: 'max-tokens' })
  })

  it('turns DeepSeek reasoning_content into reasoning deltas, sent with the key from DEEPSEEK_API_KEY', async () => {
    await serve({ reasoning: 'The user greets me. I greet back.', text: 'Hello!' })
    const chunks = await collect(
      adapter('deepseek', 'deepseek-v4-pro', { DEEPSEEK_API_KEY: 'sk-test' }).stream(
        hello,
        new AbortController().signal,
      ),
    )
    expect(chunks.filter((chunk) => chunk.type === 'reasoning-delta').length).toBeGreaterThan(2)
    expect(assemble(chunks).message().content).toEqual([
      { type: 'reasoning', text: 'The user greets me. I greet back.' },
      { type: 'text', text: 'Hello!' },
    ])
    expect(fake!.requests[0]!.headers.authorization).toBe('Bearer sk-test')
  })

  it('maps provider-neutral history to chat messages: tool calls, tool results, images; DeepSeek gets its reasoning back, never a signature', async () => {
    // Lenient: DeepSeek takes no image parts (the strict fake refuses them, tests/images.test.ts); Keel's `bounded`
    // swaps them for notes before this adapter sees them, and this test is about the unbounded mapping.
    fake = await startFakeProvider([{ text: 'done' }], { lenient: true })
    const messages: Message[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'SECRET-CHAIN-OF-THOUGHT', signature: 'sig' },
          { type: 'text', text: 'Let me check.' },
          { type: 'tool-call', id: 'call_1', name: 'bash', arguments: '{"command":"ls"}' },
          { type: 'tool-call', id: 'call_2', name: 'screenshot', arguments: '{}' },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_1',
            content: [{ type: 'text', text: 'a.txt\nb.txt' }],
            isError: false,
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_2',
            content: [
              { type: 'text', text: 'shot:' },
              { type: 'image', mediaType: 'image/jpeg', data: '/9j/' },
            ],
            isError: false,
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'SECRET-2' },
          { type: 'tool-call', id: 'call_3', name: 'bash', arguments: '{"command":"false"}' },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_3',
            content: [{ type: 'text', text: 'Error: exit code 1' }],
            isError: true,
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
    ]
    const request: LlmRequest = {
      system: 'sys',
      messages,
      tools: [
        {
          name: 'bash',
          description: 'Run a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
        },
      ],
      maxTokens: 1000,
    }
    await collect(
      adapter('deepseek', 'deepseek-v4-flash', { DEEPSEEK_API_KEY: 'k' }).stream(request, new AbortController().signal),
    )
    const body = fake!.requests[0]!.body
    expect(JSON.stringify(body)).not.toContain('"sig"')
    expect(body.max_tokens).toBe(1000)
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'bash',
          description: 'Run a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
        },
      },
    ])
    expect(body.messages).toEqual([
      { role: 'system', content: 'sys' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
          { id: 'call_2', type: 'function', function: { name: 'screenshot', arguments: '{}' } },
        ],
        reasoning_content: 'SECRET-CHAIN-OF-THOUGHT',
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'a.txt\nb.txt' },
      { role: 'tool', tool_call_id: 'call_2', content: 'shot:\n[image image/jpeg attached below]' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by the tool calls above:' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'bash', arguments: '{"command":"false"}' } }],
        reasoning_content: 'SECRET-2',
      },
      { role: 'tool', tool_call_id: 'call_3', content: 'Error: exit code 1' },
      { role: 'user', content: 'Thanks' },
    ])
  })

  it('a DeepSeek tool-call turn passes the strict fake; without reasoning_content it gets the 400 DeepSeek sends', async () => {
    await serve(
      { reasoning: 'Look first.', toolCalls: [{ id: 'call_1', name: 'bash', arguments: { command: 'ls' } }] },
      { text: 'done' },
    )
    const make = (reasoning?: ReasoningSettings) =>
      createOpenAiCompatible('deepseek', 'deepseek-v4-flash', {
        baseUrl: `${fake!.url}/v1`,
        env: { DEEPSEEK_API_KEY: 'k' },
        cwd: process.cwd(),
        reasoning,
      })
    const first = assemble(await collect(make().stream(hello, new AbortController().signal))).message()
    const history: Message[] = [
      ...hello.messages,
      first,
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', content: [], isError: false }] },
    ]
    await collect(make().stream({ ...hello, messages: history }, new AbortController().signal))
    expect(fake!.requests[1]!.body.messages[2]).toMatchObject({ role: 'assistant', reasoning_content: 'Look first.' })
    const error = await failure(
      make({ sendReasoning: false }).stream({ ...hello, messages: history }, new AbortController().signal),
    )
    expect(error.kind).toBe('bad-request')
    expect(error.message).toBe(
      `deepseek: request rejected for deepseek-v4-flash at ${fake!.url}/v1/chat/completions (400: The \`reasoning_content\` in the thinking mode must be passed back to the API.)`,
    )
    // With thinking off the rule does not apply, and the request says so.
    await collect(
      make({ thinking: 'off', sendReasoning: false }).stream(
        { ...hello, messages: history },
        new AbortController().signal,
      ),
    ).catch(() => {})
    expect(fake!.requests.at(-1)!.body.thinking).toEqual({ type: 'disabled' })
  })

  it('asks OpenRouter for reasoning and sends its reasoning_details back unchanged', () => {
    const details = [{ type: 'reasoning.text', text: 'think', signature: 'or-sig', index: 0 }]
    const history: Message[] = [
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'think', data: JSON.stringify(details), origin: 'openrouter' },
          { type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' },
        ],
      },
    ]
    const [message] = toChatMessages('', history, 'details')
    expect(message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
      reasoning_details: details,
    })
  })

  it('sends reasoning_content on both sides of the DeepSeek rule; OpenAI chat and sendReasoning: false get none', () => {
    const history: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      // An older log (or another provider's turn): a tool call with no reasoning at all.
      { role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', content: [], isError: false }] },
      // No tool call, with reasoning: DeepSeek ignores it, an interleaved-thinking server reads it.
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'plain' },
          { type: 'text', text: 'done' },
        ],
      },
      // No tool call, no reasoning: nothing to add.
      { role: 'assistant', content: [{ type: 'text', text: 'again' }] },
    ]
    const assistants = (mode?: 'content' | 'details') =>
      toChatMessages('', history, mode).filter((message) => message.role === 'assistant')
    expect(assistants('content').map((message) => message.reasoning_content)).toEqual(['', 'plain', undefined])
    expect(assistants().some((message) => 'reasoning_content' in message)).toBe(false)
  })

  it('sends max_completion_tokens to OpenAI itself', async () => {
    await serve({ text: 'ok' })
    await collect(
      adapter('openai', 'gpt-4o', { OPENAI_API_KEY: 'k' }).stream(
        { ...hello, maxTokens: 50 },
        new AbortController().signal,
      ),
    )
    expect(fake!.requests[0]!.body.max_completion_tokens).toBe(50)
    expect(fake!.requests[0]!.body.max_tokens).toBeUndefined()
  })

  it('turns 401 into a one-line auth error naming the provider and the key variable', async () => {
    await serve({ status: 401, error: 'Authentication Fails, Your api key: ****abcd is invalid' })
    const error = await failure(
      adapter('deepseek', 'deepseek-v4-flash', { DEEPSEEK_API_KEY: 'bad' }).stream(hello, new AbortController().signal),
    )
    expect(error.kind).toBe('auth')
    expect(error.status).toBe(401)
    expect(error.message).not.toContain('\n')
    expect(error.message).toContain('deepseek')
    expect(error.message).toContain('DEEPSEEK_API_KEY')
    expect(error.message).toContain('Authentication Fails')
    expect(fake!.requests).toHaveLength(1) // the SDK's own retries are off
  })

  it('maps 403, 429, 5xx and other 4xx to auth, rate-limit, server and bad-request (the SDK never retries)', async () => {
    await serve(
      { status: 403 },
      { status: 429, error: 'slow down' },
      { status: 503, error: 'overloaded' },
      { status: 400, error: 'messages: field required' },
    )
    const kinds: string[] = []
    const messages: string[] = []
    for (let i = 0; i < 4; i++) {
      const error = await failure(
        adapter('openrouter', 'x/y', { OPENROUTER_API_KEY: 'k' }).stream(hello, new AbortController().signal),
      )
      kinds.push(error.kind)
      messages.push(error.message)
    }
    expect(kinds).toEqual(['auth', 'rate-limit', 'server', 'bad-request'])
    expect(messages[0]).toContain('OPENROUTER_API_KEY')
    expect(messages[3]).toContain('messages: field required')
    expect(fake!.requests).toHaveLength(4)
  })

  it('reports a mid-stream disconnect as a network error after the text that did arrive', async () => {
    await serve({ text: 'one two three four five six', disconnectAfter: 4 })
    const seen: StreamChunk[] = []
    const error = await failure(adapter('openai-compatible', 'x').stream(hello, new AbortController().signal), seen)
    expect(error.kind).toBe('network')
    expect(error.retryable).toBe(true)
    expect(error.message).toContain('mid-stream')
    expect(seen.some((chunk) => chunk.type === 'text-delta')).toBe(true)
    expect(seen.some((chunk) => chunk.type === 'finish')).toBe(false)
  })

  it('reports a server nobody listens on as a network error naming the URL', async () => {
    await serve()
    const dead = adapter('openai-compatible', 'x')
    const url = fake!.url
    await fake!.close()
    fake = undefined
    const error = await failure(dead.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('network')
    expect(error.message).toContain(url)
    expect(error.message).toContain('ECONNREFUSED')
  })

  it('stops with an aborted error when the signal fires mid-stream', async () => {
    await serve({ text: 'thinking about it', hang: true })
    const controller = new AbortController()
    const seen: StreamChunk[] = []
    const stream = adapter('openai-compatible', 'x').stream(hello, controller.signal)
    const pending = failure(
      (async function* () {
        for await (const chunk of stream) {
          yield chunk
          if (chunk.type === 'text-delta') controller.abort()
        }
      })(),
      seen,
    )
    const error = await pending
    expect(error.kind).toBe('aborted')
    expect(seen.length).toBeGreaterThan(0)
  })

  it('stops with an aborted error when the signal fired before the request', async () => {
    await serve({ text: 'never sent' })
    const controller = new AbortController()
    controller.abort()
    const error = await failure(adapter('openai-compatible', 'x').stream(hello, controller.signal))
    expect(error.kind).toBe('aborted')
  })

  it('fails with a one-line config error naming the variable when the key is missing', () => {
    for (const [provider, variable] of [
      ['deepseek', 'DEEPSEEK_API_KEY'],
      ['openai', 'OPENAI_API_KEY'],
      ['openrouter', 'OPENROUTER_API_KEY'],
    ] as const) {
      let error: unknown
      try {
        createOpenAiCompatible(provider, 'm', { env: { [variable]: '  ' }, cwd: '.' })
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(LlmError)
      expect((error as LlmError).kind).toBe('config')
      expect((error as LlmError).message).toBe(`${variable} is not set (needed for --model ${provider}/m)`)
    }
  })

  it('requires --base-url for openai-compatible and rejects a non-URL', () => {
    expect(() => createOpenAiCompatible('openai-compatible', 'llama3', { env: {}, cwd: '.' })).toThrow(
      /--base-url is required for --model openai-compatible\/llama3/,
    )
    expect(() =>
      createOpenAiCompatible('openai-compatible', 'llama3', { baseUrl: 'localhost:11434', env: {}, cwd: '.' }),
    ).toThrow(/not an http\(s\) URL/)
  })

  it('takes the context window, output limit and price of a known model from the catalog', () => {
    const gpt = createOpenAiCompatible('openai', 'gpt-5', { env: { OPENAI_API_KEY: 'k' }, cwd: '.' })
    expect(gpt.contextWindow).toBe(400_000)
    expect(gpt.options.maxOutput).toBe(128_000)
    expect(gpt.price).toMatchObject({ input: 1.25, output: 10 })
    expect(gpt.vision).toBe(true)
    const local = createOpenAiCompatible('openai-compatible', 'llama3.1:8b', {
      baseUrl: 'http://127.0.0.1:1',
      env: {},
      cwd: '.',
    })
    expect(local.contextWindow).toBe(32_768)
    expect(local.price).toBeUndefined()
    expect(local.vision).toBe(false)
  })
})
