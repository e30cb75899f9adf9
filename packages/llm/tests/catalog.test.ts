// The model catalog: the vendored snapshot, the settings' overrides, a local server's own model list, and what a
// text-only model is sent in place of an image.
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { modelInfo, OPENAI_COMPATIBLE_DEFAULT_WINDOW } from '../src/catalog.ts'
import { imageNote } from '../src/limits.ts'
import { createProvider } from '../src/providers.ts'
import type { LlmRequest } from '../src/index.ts'
import { collect } from './stream-support.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const env = { ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'k', DEEPSEEK_API_KEY: 'k' }

describe('modelInfo', () => {
  it('knows the window, output limit, prices and capabilities of current models', () => {
    expect(modelInfo('openai', 'gpt-5')).toMatchObject({
      contextWindow: 400_000,
      maxOutput: 128_000,
      price: { input: 1.25, output: 10, cacheRead: 0.125 },
      vision: true,
      toolCalls: true,
      reasoning: true,
    })
    expect(modelInfo('anthropic', 'claude-sonnet-4-5')).toMatchObject({
      price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
      vision: true,
    })
    expect(modelInfo('anthropic', 'claude-sonnet-4-6').contextWindow).toBe(1_000_000)
    expect(modelInfo('openrouter', 'anthropic/claude-sonnet-4.5').price?.cacheWrite).toBe(3.75)
    expect(modelInfo('deepseek', 'deepseek-chat').vision).toBe(false)
    expect(modelInfo('openai-compatible', 'llama3.1:8b')).toEqual({})
  })

  it('lets a settings override win, field by field, price included', () => {
    const info = modelInfo('anthropic', 'claude-sonnet-4-5', {
      'anthropic/claude-sonnet-4-5': { contextWindow: 50_000, maxOutput: 4096, price: { input: 1 } },
    })
    expect(info.contextWindow).toBe(50_000)
    expect(info.maxOutput).toBe(4096)
    expect(info.price).toEqual({ input: 1, output: 15, cacheRead: 0.3, cacheWrite: 3.75 })
    // A price for a model the catalog does not know needs both input and output.
    expect(
      modelInfo('openai-compatible', 'm', { 'openai-compatible/m': { price: { input: 1 } } }).price,
    ).toBeUndefined()
  })
})

describe('createProvider with the catalog', () => {
  it('sends max_tokens from the catalog', async () => {
    fake = await startFakeProvider([{ text: 'ok' }])
    const model = await createProvider('openai', 'gpt-5', { baseUrl: `${fake.url}/v1`, env, cwd: '.' })
    await collect(model.stream(request([{ type: 'text', text: 'hi' }]), new AbortController().signal))
    // openai/* speaks the Responses API, whose field is max_output_tokens.
    expect(fake.requests[0]!.body.max_output_tokens).toBe(128_000)
  })

  it("reads an openai-compatible server's window from its /v1/models (vLLM max_model_len)", async () => {
    fake = await startFakeProvider([], { models: [{ id: 'qwen', object: 'model', max_model_len: 40_960 }] })
    const options = { baseUrl: `${fake.url}/v1`, env: {}, cwd: '.' }
    expect((await createProvider('openai-compatible', 'qwen', options)).contextWindow).toBe(40_960)
    expect(fake.listings).toBe(1)
    // A model the list does not have: the stated default.
    expect((await createProvider('openai-compatible', 'other', options)).contextWindow).toBe(
      OPENAI_COMPATIBLE_DEFAULT_WINDOW,
    )
    // The setting wins, and the server is not asked.
    const set = await createProvider('openai-compatible', 'qwen', {
      ...options,
      models: { 'openai-compatible/qwen': { contextWindow: 8192 } },
    })
    expect(set.contextWindow).toBe(8192)
    expect(fake.listings).toBe(2)
  })

  it('sends a text-only model a note in place of each image; a vision model gets the image', async () => {
    fake = await startFakeProvider([{ text: 'ok' }, { text: 'ok' }])
    const image = { type: 'image' as const, mediaType: 'image/png', data: 'iVBORw0KGgo=' }
    const messages = request([{ type: 'text', text: 'look' }, image])
    const textOnly = await createProvider('deepseek', 'deepseek-v4-flash', {
      baseUrl: `${fake.url}/v1`,
      env,
      cwd: '.',
    })
    await collect(textOnly.stream(messages, new AbortController().signal))
    const sent = JSON.stringify(fake.requests[0]!.body.messages)
    expect(sent).not.toContain('image_url')
    expect(sent).toContain(JSON.stringify(imageNote(image, 'deepseek-v4-flash')).slice(1, -1))
    const vision = await createProvider('openai', 'gpt-5', { baseUrl: `${fake.url}/v1`, env, cwd: '.' })
    await collect(vision.stream(messages, new AbortController().signal))
    expect(JSON.stringify(fake.requests[1]!.body.input)).toContain('input_image')
  })
})

describe('Claude through OpenRouter', () => {
  it('marks the system prompt and the latest message as cache breakpoints; other OpenRouter models get none', async () => {
    fake = await startFakeProvider([{ text: 'ok' }, { text: 'ok' }])
    const options = { baseUrl: `${fake.url}/v1`, env: { OPENROUTER_API_KEY: 'k' }, cwd: '.' }
    const claude = await createProvider('openrouter', 'anthropic/claude-sonnet-4.5', options)
    await collect(claude.stream(request([{ type: 'text', text: 'hi' }]), new AbortController().signal))
    expect(fake.requests[0]!.body.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }] },
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
    ])
    const gpt = await createProvider('openrouter', 'openai/gpt-5', options)
    await collect(gpt.stream(request([{ type: 'text', text: 'hi' }]), new AbortController().signal))
    expect(JSON.stringify(fake.requests[1]!.body)).not.toContain('cache_control')
  })
})

function request(content: LlmRequest['messages'][number]['content']): LlmRequest {
  return { system: 's', messages: [{ role: 'user', content } as LlmRequest['messages'][number]], tools: [] }
}
