import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import { textOf } from '@keel/session/messages'
import * as llm from '../src/index.ts'
import {
  LlmError,
  LlmService,
  MessageAssembler,
  ScriptedAdapter,
  type LlmRequest,
  type StreamChunk,
} from '../src/index.ts'
import { registerProviders } from '../src/providers.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

async function serve(...replies: FakeReply[]): Promise<FakeProvider> {
  fake = await startFakeProvider(replies)
  return fake
}

/** A context with the @keel/llm plugin applied the way a composition file would, with fast retries. */
function boot(config: Partial<llm.Config> = {}): Context {
  const ctx = new Context()
  ctx.plugin(llm, { retryAttempts: 3, retryBaseDelayMs: 10, ...config })
  return ctx
}

const request = (prompt: string): LlmRequest => ({
  system: '',
  messages: [{ role: 'user', content: [{ type: 'text', text: prompt }] }],
  tools: [],
})

async function run(stream: AsyncIterable<StreamChunk>): Promise<{ chunks: StreamChunk[]; error?: LlmError }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of stream) chunks.push(chunk)
  } catch (error) {
    if (!(error instanceof LlmError)) throw error
    return { chunks, error }
  }
  return { chunks }
}

function text(chunks: StreamChunk[]): string {
  const assembler = new MessageAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return textOf(assembler.message().content)
}

describe('ctx.llm with the real providers', () => {
  it('registers all five providers next to scripted', () => {
    const ctx = boot()
    expect(ctx.llm.providerNames().sort()).toEqual([
      'anthropic',
      'deepseek',
      'openai',
      'openai-compatible',
      'openrouter',
      'scripted',
    ])
  })

  it.each([
    ['openai-compatible/x', (url: string) => `${url}/v1`, {}],
    ['deepseek/deepseek-v4-flash', (url: string) => `${url}/v1`, { DEEPSEEK_API_KEY: 'k' }],
    ['openrouter/a/b', (url: string) => `${url}/v1`, { OPENROUTER_API_KEY: 'k' }],
    ['openai/gpt-5.5', (url: string) => `${url}/v1`, { OPENAI_API_KEY: 'k' }],
    ['anthropic/claude-sonnet-5', (url: string) => url, { ANTHROPIC_API_KEY: 'k' }],
  ])('%s sends the settings headers of its provider, ${VAR} filled in', async (spec, base, env) => {
    await serve({ text: 'ok' })
    const provider = spec.slice(0, spec.indexOf('/'))
    const ctx = boot({
      providers: { [provider]: { headers: { 'x-gateway': 'route-${GW}' } }, other: { headers: { 'x-no': '1' } } },
    })
    const adapter = await ctx.llm.create(spec, { baseUrl: base(fake!.url), env: { ...env, GW: 'eu' } })
    const { error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error).toBeUndefined()
    expect(fake!.requests[0]!.headers['x-gateway']).toBe('route-eu')
    expect(fake!.requests[0]!.headers['x-no']).toBeUndefined()
  })

  it('a header whose ${VAR} is unset is a config error naming the key', async () => {
    const ctx = boot({ providers: { 'openai-compatible': { headers: { 'x-key': '${NOPE}' } } } })
    await expect(ctx.llm.create('openai-compatible/x', { baseUrl: 'http://127.0.0.1:9/v1', env: {} })).rejects.toThrow(
      'providers.openai-compatible.headers.x-key: uses ${NOPE}, which is not set',
    )
  })

  it('retries a 429 and then streams the answer (one request per attempt)', async () => {
    await serve({ status: 429, error: 'rate limit reached' }, { text: 'second time lucky' })
    const adapter = await boot().llm.create('openai-compatible/x', { baseUrl: `${fake!.url}/v1`, env: {} })
    const { chunks, error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error).toBeUndefined()
    expect(text(chunks)).toBe('second time lucky')
    expect(fake!.requests).toHaveLength(2)
  })

  it('retries a 5xx from Anthropic too', async () => {
    await serve({ status: 529, error: 'Overloaded' }, { text: 'fine now' })
    const adapter = await boot().llm.create('anthropic/claude-sonnet-5', {
      baseUrl: fake!.url,
      env: { ANTHROPIC_API_KEY: 'k' },
    })
    const { chunks, error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error).toBeUndefined()
    expect(text(chunks)).toBe('fine now')
    expect(fake!.requests).toHaveLength(2)
  })

  it('gives up after retryAttempts and says how many attempts it made', async () => {
    await serve({ status: 500 }, { status: 502 }, { status: 503, error: 'still down' }, { text: 'never reached' })
    const adapter = await boot().llm.create('deepseek/deepseek-v4-flash', {
      baseUrl: `${fake!.url}/v1`,
      env: { DEEPSEEK_API_KEY: 'k' },
    })
    const { error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error?.kind).toBe('server')
    expect(error?.message).toContain('still down')
    expect(error?.message).toContain('(after 3 attempts)')
    expect(fake!.requests).toHaveLength(3)
  })

  it('honours retryAttempts from the plugin config', async () => {
    await serve({ status: 429 }, { text: 'not reached' })
    const adapter = await boot({ retryAttempts: 1 }).llm.create('openai-compatible/x', {
      baseUrl: `${fake!.url}/v1`,
      env: {},
    })
    const { error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error?.kind).toBe('rate-limit')
    expect(fake!.requests).toHaveLength(1)
  })

  it('does not retry an auth error', async () => {
    await serve({ status: 401, error: 'bad key' }, { text: 'not reached' })
    const adapter = await boot().llm.create('openai/gpt-4o', {
      baseUrl: `${fake!.url}/v1`,
      env: { OPENAI_API_KEY: 'k' },
    })
    const { error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error?.kind).toBe('auth')
    expect(error?.message).toContain('OPENAI_API_KEY')
    expect(fake!.requests).toHaveLength(1)
  })

  it('does not retry a disconnect after output arrived (nothing is duplicated)', async () => {
    await serve({ text: 'partial answer that breaks', disconnectAfter: 3 }, { text: 'not reached' })
    const adapter = await boot().llm.create('openai-compatible/x', { baseUrl: `${fake!.url}/v1`, env: {} })
    const { chunks, error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error?.kind).toBe('network')
    expect(chunks.length).toBeGreaterThan(0)
    expect(fake!.requests).toHaveLength(1)
  })

  it('does retry a disconnect before any output arrived', async () => {
    await serve({ text: 'x', disconnectAfter: 0 }, { text: 'recovered' })
    const adapter = await boot().llm.create('openai-compatible/x', { baseUrl: `${fake!.url}/v1`, env: {} })
    const { chunks, error } = await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(error).toBeUndefined()
    expect(text(chunks)).toBe('recovered')
    expect(fake!.requests).toHaveLength(2)
  })

  it('works with a service constructed directly with a small retry delay', async () => {
    await serve({ status: 503 }, { text: 'ok' })
    const service = new LlmService(new Context(), { attempts: 3, baseDelayMs: 10 })
    registerProviders(service)
    const adapter = await service.create('openai-compatible/x', { baseUrl: `${fake!.url}/v1`, env: {} })
    expect(text((await run(adapter.stream(request('hi'), new AbortController().signal))).chunks)).toBe('ok')
  })

  it('rejects create() with a one-line config error naming the missing variable', async () => {
    const ctx = boot()
    await expect(ctx.llm.create('deepseek/deepseek-v4-flash', { env: {} })).rejects.toMatchObject({
      kind: 'config',
      message: 'DEEPSEEK_API_KEY is not set (needed for --model deepseek/deepseek-v4-flash)',
    })
    await expect(ctx.llm.create('anthropic/claude-opus-5', { env: {} })).rejects.toMatchObject({
      kind: 'config',
      message: 'ANTHROPIC_API_KEY is not set (needed for --model anthropic/claude-opus-5)',
    })
    await expect(ctx.llm.create('openrouter/deepseek/deepseek-v4-flash', { env: {} })).rejects.toMatchObject({
      kind: 'config',
      message: 'OPENROUTER_API_KEY is not set (needed for --model openrouter/deepseek/deepseek-v4-flash)',
    })
    await expect(ctx.llm.create('nope/x', { env: {} })).rejects.toMatchObject({ kind: 'config' })
  })

  it('lets --base-url override any provider and keeps the model name after the first slash', async () => {
    await serve({ text: 'ok' })
    const adapter = await boot().llm.create('openrouter/anthropic/claude-sonnet-5', {
      baseUrl: `${fake!.url}/v1`,
      env: { OPENROUTER_API_KEY: 'k' },
    })
    expect(adapter.model).toBe('anthropic/claude-sonnet-5')
    expect(adapter.contextWindow).toBe(1_000_000)
    await run(adapter.stream(request('hi'), new AbortController().signal))
    expect(fake!.requests[0]!.body.model).toBe('anthropic/claude-sonnet-5')
  })

  it('removes the providers when the plugin is disposed', async () => {
    const root = new Context()
    const fork = root.plugin(llm, { retryAttempts: 3, retryBaseDelayMs: 10 })
    expect(root.llm.providerNames()).toContain('deepseek')
    fork.dispose()
    await new Promise((done) => setTimeout(done, 0))
    expect(root.get('llm')).toBeUndefined()
  })
})

describe('ScriptedAdapter', () => {
  it('routes steps by `when` against the first user prompt, in order, and records every request', async () => {
    const adapter = new ScriptedAdapter({
      steps: [
        { when: 'child task', text: 'child answer' },
        { text: 'parent first' },
        {
          when: 'parent',
          toolCalls: [{ name: 'bash', arguments: { command: 'ls' }, id: 'call_x' }],
          usage: { input: 7, output: 3 },
        },
      ],
    })
    const child = await run(adapter.stream(request('please do the child task'), new AbortController().signal))
    expect(text(child.chunks)).toBe('child answer')
    const parent1 = await run(adapter.stream(request('parent prompt'), new AbortController().signal))
    expect(text(parent1.chunks)).toBe('parent first')
    const parent2 = await run(adapter.stream(request('parent prompt'), new AbortController().signal))
    const assembler = new MessageAssembler()
    for (const chunk of parent2.chunks) assembler.push(chunk)
    expect(assembler.message().content).toEqual([
      { type: 'tool-call', id: 'call_x', name: 'bash', arguments: '{"command":"ls"}' },
    ])
    expect(assembler.usage).toEqual({ input: 7, output: 3 })
    expect(assembler.finish).toBe('tool-calls')
    expect(adapter.requests.map((r) => textOf(r.messages[0]!.content))).toEqual([
      'please do the child task',
      'parent prompt',
      'parent prompt',
    ])

    const exhausted = await run(adapter.stream(request('parent prompt'), new AbortController().signal))
    expect(exhausted.error?.kind).toBe('bad-request')
    expect(exhausted.error?.message).toContain('no step left')
  })

  it('records a copy of the request, fails a step with its error, and streams reasoning before text', async () => {
    const adapter = new ScriptedAdapter({
      steps: [{ error: { kind: 'rate-limit', message: 'scripted 429' } }, { reasoning: 'hmm ok', text: 'yes' }],
    })
    const sent = request('q')
    const failed = await run(adapter.stream(sent, new AbortController().signal))
    expect(failed.error).toMatchObject({ kind: 'rate-limit', message: 'scripted 429' })
    ;(sent.messages[0]!.content[0] as { text: string }).text = 'mutated'
    expect(textOf(adapter.requests[0]!.messages[0]!.content)).toBe('q')
    const ok = await run(adapter.stream(request('q'), new AbortController().signal))
    expect(ok.chunks.map((chunk) => chunk.type)).toEqual([
      'reasoning-delta',
      'reasoning-delta',
      'text-delta',
      'usage',
      'finish',
    ])
  })

  it('is not wrapped in retries by ctx.llm (errors surface at once)', async () => {
    const ctx = boot()
    const adapter = await ctx.llm.create('scripted/demo-does-not-exist').catch((error: LlmError) => error)
    expect(adapter).toBeInstanceOf(LlmError)
    expect((adapter as LlmError).kind).toBe('config')
  })

  it('hangs until aborted when a step says so', async () => {
    const adapter = new ScriptedAdapter({ steps: [{ text: 'waiting', hang: true }] })
    const controller = new AbortController()
    const pending = run(adapter.stream(request('q'), controller.signal))
    setTimeout(() => controller.abort(), 20)
    const { chunks, error } = await pending
    expect(text(chunks)).toBe('waiting')
    expect(error?.kind).toBe('aborted')
  })
})

describe('what a model tells the person, once', () => {
  /** The `keel/notice` lines the plugin emitted. */
  function notices(ctx: Context): string[] {
    const lines: string[] = []
    ctx.on('keel/notice', (notice) => {
      if (notice.source === 'model') lines.push(notice.text)
    })
    return lines
  }

  it('a model the catalog does not know still works, and which defaults apply is said once', async () => {
    await serve({ text: 'hi' })
    const ctx = boot()
    const told = notices(ctx)
    const options = { baseUrl: `${fake!.url}/v1`, env: { DEEPSEEK_API_KEY: 'k' } }
    const adapter = await ctx.llm.create('deepseek/deepseek-v9-unreleased', options)
    expect((await run(adapter.stream(request('hi'), new AbortController().signal))).error).toBeUndefined()
    await ctx.llm.create('deepseek/deepseek-v9-unreleased', options)
    expect(told).toEqual([
      expect.stringMatching(
        /^deepseek\/deepseek-v9-unreleased is not in Keel's model catalog: using no known context window, no price \(its cost is not counted\).*models\["deepseek\/deepseek-v9-unreleased"\]/,
      ),
    ])
    // A known model, or one the settings describe, says nothing.
    await ctx.llm.create('deepseek/deepseek-v4-flash', options)
    await ctx.llm.create('deepseek/mine', { ...options, models: { 'deepseek/mine': { contextWindow: 1000 } } })
    expect(told).toHaveLength(1)
  })

  it('reasoning an older session has that the provider cannot take back is left out, and said once', async () => {
    await serve({ text: 'a' }, { text: 'b' })
    const ctx = boot()
    const told = notices(ctx)
    const adapter = await ctx.llm.create('deepseek/deepseek-v4-flash', {
      baseUrl: `${fake!.url}/v1`,
      env: { DEEPSEEK_API_KEY: 'k' },
    })
    // Anthropic's redacted thinking (opaque data, no text) has no `reasoning_content` form.
    const older: LlmRequest = {
      ...request('go'),
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'go' }] },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: '', data: 'REDACTED', origin: 'anthropic' },
            { type: 'text', text: 'done before' },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'again' }] },
      ],
    }
    for (let i = 0; i < 2; i++) await run(adapter.stream(older, new AbortController().signal))
    expect(fake!.requests.map((r) => JSON.stringify(r.body)).join('\n')).not.toContain('REDACTED')
    expect(told).toEqual([expect.stringMatching(/^deepseek\/deepseek-v4-flash: earlier reasoning it cannot take back/)])
  })
})
