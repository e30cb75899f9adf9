// Rate-limit-aware retries and bounded replies, through the real adapters against the fake server.
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import * as llm from '../src/index.ts'
import { REPLY_CHAR_LIMIT, REPLY_TOOL_CALL_LIMIT } from '../src/limits.ts'
import { type RetryNotice, retryText, serverWaitMs } from '../src/retries.ts'
import { collect, failure, hello } from './stream-support.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

async function adapter(
  spec: string,
  replies: FakeReply[],
  config: Partial<llm.Config> = {},
): Promise<{ model: llm.LlmAdapter; notices: RetryNotice[] }> {
  fake = await startFakeProvider(replies)
  const ctx = new Context()
  ctx.plugin(llm, { retryAttempts: 6, retryBaseDelayMs: 10, ...config })
  await ctx.lifecycle.flush()
  const notices: RetryNotice[] = []
  ctx.on('llm/retry', (notice) => notices.push(notice))
  const anthropic = spec.startsWith('anthropic/')
  const model = await ctx.llm.create(spec, {
    baseUrl: anthropic ? fake.url : `${fake.url}/v1`,
    env: { ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k', DEEPSEEK_API_KEY: 'k' },
  })
  return { model, notices }
}

const gaps = (f: FakeProvider) => f.requests.slice(1).map((request, i) => request.at - f.requests[i]!.at)

describe('serverWaitMs: what the server asks a client to wait', () => {
  const headers = (values: Record<string, string>) => (name: string) => values[name]
  it('reads retry-after-ms, retry-after in seconds or as an HTTP date, and the providers’ reset headers', () => {
    const now = Date.parse('2026-12-01T10:00:00Z')
    expect(serverWaitMs(headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), now)).toBe(1500)
    expect(serverWaitMs(headers({ 'retry-after': '7' }), now)).toBe(7000)
    expect(serverWaitMs(headers({ 'retry-after': 'Tue, 01 Dec 2026 10:00:12 GMT' }), now)).toBe(12_000)
    expect(serverWaitMs(headers({ 'anthropic-ratelimit-tokens-reset': '2026-12-01T10:00:03Z' }), now)).toBe(3000)
    expect(
      serverWaitMs(headers({ 'x-ratelimit-reset-requests': '1m30s', 'x-ratelimit-reset-tokens': '250ms' }), now),
    ).toBe(90_000)
    expect(serverWaitMs(headers({}), now)).toBeUndefined()
    expect(serverWaitMs(headers({ 'retry-after': 'soon' }), now)).toBeUndefined()
  })
})

describe('withRetries against the fake server', () => {
  it('waits what retry-after says (twice), then streams; each wait is announced', async () => {
    const limited = { status: 429, headers: { 'retry-after': '1' } }
    const { model, notices } = await adapter('anthropic/claude-sonnet-4-5', [limited, limited, { text: 'done' }])
    const chunks = await collect(model.stream(hello, new AbortController().signal))
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: 'stop' })
    expect(fake!.requests).toHaveLength(3)
    for (const gap of gaps(fake!)) expect(gap).toBeGreaterThanOrEqual(950)
    expect(notices.map(retryText)).toEqual([
      'rate limited by anthropic, retrying in 1 s (2/6)',
      'rate limited by anthropic, retrying in 1 s (3/6)',
    ])
  })

  it('caps a wait the server asks for at retryMaxWaitMs', async () => {
    const { model, notices } = await adapter(
      'openai/gpt-5',
      [{ status: 429, headers: { 'retry-after': '9999' } }, { text: 'ok' }],
      { retryMaxWaitMs: 200 },
    )
    await collect(model.stream(hello, new AbortController().signal))
    expect(notices[0]!.waitMs).toBe(200)
    expect(gaps(fake!)[0]).toBeLessThan(2000)
  })

  it('stops once the waits would pass retryMaxTotalWaitMs, saying how many attempts it made', async () => {
    const limited = { status: 429, headers: { 'retry-after-ms': '150' } }
    const { model } = await adapter('openai/gpt-5', [limited, limited, limited, limited, { text: 'ok' }], {
      retryMaxTotalWaitMs: 400,
    })
    const error = await failure(model.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('rate-limit')
    expect(error.message).toMatch(/\(after 3 attempts\)$/)
    expect(fake!.requests).toHaveLength(3)
  })

  it("retries Anthropic's 529 overloaded_error", async () => {
    const { model, notices } = await adapter('anthropic/claude-sonnet-4-5', [{ status: 529 }, { text: 'ok' }])
    await collect(model.stream(hello, new AbortController().signal))
    expect(notices[0]!.kind).toBe('server')
    expect(fake!.requests).toHaveLength(2)
  })

  it('a cancel during the wait ends the request at once', async () => {
    const { model, notices } = await adapter('anthropic/claude-sonnet-4-5', [
      { status: 429, headers: { 'retry-after': '30' } },
      { text: 'never' },
    ])
    const controller = new AbortController()
    const started = Date.now()
    const pending = failure(model.stream(hello, controller.signal))
    while (!notices.length) await new Promise((done) => setTimeout(done, 10))
    controller.abort()
    const error = await pending
    expect(error.kind).toBe('aborted')
    expect(Date.now() - started).toBeLessThan(5000)
    expect(fake!.requests).toHaveLength(1)
  })

  it('an invalid key reported inside a 200 stream is an auth error, not retried', async () => {
    const { model } = await adapter('deepseek/deepseek-v4-flash', [
      { text: 'he', streamError: { message: 'Incorrect API key provided', code: 'invalid_api_key' } },
      { text: 'never' },
    ])
    const error = await failure(model.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('auth')
    expect(fake!.requests).toHaveLength(1)
  })
})

describe('bounded replies', () => {
  it('ends a reply stream that never ends, with a one-line error', async () => {
    for (const spec of ['openai/gpt-5', 'anthropic/claude-sonnet-4-5']) {
      const { model } = await adapter(spec, [{ text: 'start', endless: 64 * 1024 }])
      const error = await failure(model.stream(hello, new AbortController().signal))
      expect(error.message).toContain(`past ${REPLY_CHAR_LIMIT.toLocaleString('en-US')} characters`)
      await fake!.close()
      fake = undefined
    }
  })

  it('caps the tool calls of one reply', async () => {
    const calls = Array.from({ length: REPLY_TOOL_CALL_LIMIT + 5 }, (_, i) => ({ name: 'bash', arguments: { i } }))
    const { model } = await adapter('openai/gpt-5', [{ toolCalls: calls }])
    const error = await failure(model.stream(hello, new AbortController().signal))
    expect(error.message).toContain(`more than ${REPLY_TOOL_CALL_LIMIT} tool calls`)
  })
})
