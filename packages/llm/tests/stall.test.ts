// A provider that goes silent: before its headers, right after them, or mid-reply. Both wire formats, through
// ctx.llm.create (so retries apply) with a short idle timeout.
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import { textOf } from '@keel/session/messages'
import * as llm from '../src/index.ts'
import { LlmError, MessageAssembler, type LlmAdapter, type StreamChunk } from '../src/index.ts'
import { hello } from './stream-support.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const IDLE = 300

function boot(config: Partial<llm.Config> = {}): Context {
  const ctx = new Context()
  ctx.plugin(llm, { retryAttempts: 3, retryBaseDelayMs: 10, idleTimeoutMs: IDLE, ...config })
  return ctx
}

const flavors = {
  'OpenAI-compatible': (ctx: Context) => ctx.llm.create('openai-compatible/x', { baseUrl: `${fake!.url}/v1`, env: {} }),
  Anthropic: (ctx: Context) =>
    ctx.llm.create('anthropic/claude-sonnet-5', { baseUrl: fake!.url, env: { ANTHROPIC_API_KEY: 'k' } }),
}

async function run(
  stream: AsyncIterable<StreamChunk>,
  onChunk?: (chunk: StreamChunk) => void,
): Promise<{ chunks: StreamChunk[]; error?: LlmError }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of stream) {
      chunks.push(chunk)
      onChunk?.(chunk)
    }
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

describe.each(Object.entries(flavors))(
  '%s: a stalled stream',
  (_label, create: (ctx: Context) => Promise<LlmAdapter>) => {
    async function serve(...replies: FakeReply[]): Promise<LlmAdapter> {
      fake = await startFakeProvider(replies)
      return create(boot())
    }

    it('before the first byte (no headers) is retried like a dropped connection', async () => {
      const adapter = await serve({ text: 'never sent', stallBeforeHeaders: true }, { text: 'second try answers' })
      const { chunks, error } = await run(adapter.stream(hello, new AbortController().signal))
      expect(error).toBeUndefined()
      expect(text(chunks)).toBe('second try answers')
      expect(fake!.requests).toHaveLength(2)
    })

    it('after the headers but before any event is retried too', async () => {
      const adapter = await serve({ text: 'never sent', stallAfter: 0 }, { text: 'recovered' })
      const { chunks, error } = await run(adapter.stream(hello, new AbortController().signal))
      expect(error).toBeUndefined()
      expect(text(chunks)).toBe('recovered')
      expect(fake!.requests).toHaveLength(2)
    })

    it('gives up after retryAttempts stalls with a one-line network error that says so', async () => {
      const adapter = await serve(
        { stallBeforeHeaders: true },
        { stallBeforeHeaders: true },
        { stallBeforeHeaders: true },
        { text: 'not reached' },
      )
      const { error } = await run(adapter.stream(hello, new AbortController().signal))
      expect(error?.kind).toBe('network')
      expect(error?.message).toMatch(
        /no response \(nothing received for 0\.30 s; idleTimeoutMs\) \(after 3 attempts\)$/,
      )
      expect(fake!.requests).toHaveLength(3)
    })

    it('after text has streamed ends with a clear error, never retried (nothing is duplicated)', async () => {
      const adapter = await serve({ text: 'one two three four five six', stallAfter: 5 }, { text: 'not reached' })
      const { chunks, error } = await run(adapter.stream(hello, new AbortController().signal))
      expect(text(chunks).length).toBeGreaterThan(0)
      expect(error?.kind).toBe('network')
      expect(error?.message).toMatch(/the stream stalled \(nothing received for 0\.30 s; idleTimeoutMs\)$/)
      expect(error?.message).not.toContain('\n')
      expect(fake!.requests).toHaveLength(1)
    })

    it('is cancelled at once by the caller, long before the idle timeout', async () => {
      fake = await startFakeProvider([{ text: 'one two three', hang: true }])
      const adapter = await create(boot({ idleTimeoutMs: 600_000 }))
      const controller = new AbortController()
      // Abort once the text is in and the stream has gone quiet; without an immediate cancel this test times out.
      const { chunks, error } = await run(adapter.stream(hello, controller.signal), (chunk) => {
        if (chunk.type === 'text-delta' && text([chunk]).includes('three')) setTimeout(() => controller.abort(), 50)
      })
      expect(text(chunks)).toBe('one two three')
      expect(error?.kind).toBe('aborted')
    })

    it('is cancelled at once while waiting for the headers', async () => {
      fake = await startFakeProvider([{ stallBeforeHeaders: true }])
      const adapter = await create(boot({ idleTimeoutMs: 600_000 }))
      const controller = new AbortController()
      const pending = run(adapter.stream(hello, controller.signal))
      while (fake.requests.length === 0) await new Promise((done) => setTimeout(done, 5))
      controller.abort()
      const { error } = await pending
      expect(error?.kind).toBe('aborted')
      expect(fake.requests).toHaveLength(1)
    })
  },
)

describe('idleTimeoutMs config', () => {
  it('defaults to 90 s and is validated', () => {
    const defaults = { retryAttempts: 3, retryBaseDelayMs: 500 }
    expect(llm.Config(defaults).idleTimeoutMs).toBe(90_000)
    const ctx = new Context()
    ctx.plugin(llm, defaults)
    expect(ctx.llm.idleTimeoutMs).toBe(90_000)
    expect(() => llm.Config({ ...defaults, idleTimeoutMs: -1 })).toThrow()
  })
})
