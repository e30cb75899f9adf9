// An image a person attached goes out as each wire format's docs say, and the strict fake refuses what the real
// API refuses (a type the bytes do not match, a part in the wrong message, an image for DeepSeek).
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { imageBlock } from '@keel/session/image'
import type { ImageBlock, Message } from '@keel/session/messages'
import { createAnthropic } from '../src/anthropic-provider.ts'
import { createOpenAiCompatible } from '../src/openai-provider.ts'
import { createResponses } from '../src/responses.ts'
import { imageRefusal } from '../src/limits.ts'
import type { LlmAdapter, LlmRequest } from '../src/index.ts'
import { collect, failure } from './stream-support.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

/** A real 1×1 PNG. */
const PNG = Uint8Array.from(
  Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
  ),
)
const shot = imageBlock('shot.png', PNG) as ImageBlock

function request(image: ImageBlock): LlmRequest {
  const messages: Message[] = [
    { role: 'user', content: [{ type: 'text', text: 'what is wrong on this page?' }, image], source: 'user' },
  ]
  return { system: 'terse', messages, tools: [] }
}

const env = { OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'sk-ant-test', DEEPSEEK_API_KEY: 'sk-ds' }

const formats: { name: string; make: () => LlmAdapter; sent: (body: any) => unknown; expected: unknown }[] = [
  {
    name: 'chat completions',
    make: () =>
      createOpenAiCompatible('openai-compatible', 'llava', { baseUrl: `${fake!.url}/v1`, env, cwd: process.cwd() }),
    sent: (body) => body.messages.at(-1).content,
    expected: [
      { type: 'text', text: 'what is wrong on this page?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${shot.data}` } },
    ],
  },
  {
    name: 'Responses',
    make: () => createResponses('gpt-5', { baseUrl: `${fake!.url}/v1`, env, cwd: process.cwd() }),
    sent: (body) => body.input.at(-1).content,
    expected: [
      { type: 'input_text', text: 'what is wrong on this page?' },
      { type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${shot.data}` },
    ],
  },
  {
    name: 'Anthropic Messages',
    make: () => createAnthropic('claude-sonnet-4-5', { baseUrl: fake!.url, env, cwd: process.cwd() }),
    sent: (body) => body.messages.at(-1).content.map(({ cache_control, ...block }: Record<string, unknown>) => block),
    expected: [
      { type: 'text', text: 'what is wrong on this page?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: shot.data } },
    ],
  },
]

describe.each(formats)('$name', ({ make, sent, expected }) => {
  it('sends the image as documented, and never its file name', async () => {
    fake = await startFakeProvider([{ text: 'the button is cut off' }])
    await collect(make().stream(request(shot), new AbortController().signal))
    expect(sent(fake.requests[0]!.body)).toEqual(expected)
    expect(JSON.stringify(fake.requests[0]!.body)).not.toContain('shot.png')
  })

  it('is refused by the strict fake when the type is not one the API takes', async () => {
    fake = await startFakeProvider([{ text: 'unused' }])
    const error = await failure(
      make().stream(request({ ...shot, mediaType: 'image/bmp' }), new AbortController().signal),
    )
    expect(error.kind).toBe('bad-request')
  })

  it('is refused by the strict fake when the data is not an image', async () => {
    fake = await startFakeProvider([{ text: 'unused' }])
    const error = await failure(
      make().stream(request({ ...shot, data: btoa('plain text, not a picture') }), new AbortController().signal),
    )
    expect(error.kind).toBe('bad-request')
  })
})

it('Anthropic refuses bytes that are not the media type claimed', async () => {
  fake = await startFakeProvider([{ text: 'unused' }])
  const claude = createAnthropic('claude-sonnet-4-5', { baseUrl: fake.url, env, cwd: process.cwd() })
  const error = await failure(
    claude.stream(request({ ...shot, mediaType: 'image/jpeg' }), new AbortController().signal),
  )
  expect(error.message).toContain('specified using the image/jpeg media type, but the image appears to be a image/png')
})

describe('text-only models', () => {
  it('DeepSeek refuses an image part, and Keel refuses before the request: the catalog says it has no vision', async () => {
    fake = await startFakeProvider([{ text: 'unused' }, { text: 'unused' }])
    const deepseek = createOpenAiCompatible('deepseek', 'deepseek-v4-flash', {
      baseUrl: `${fake.url}/v1`,
      env,
      cwd: process.cwd(),
    })
    expect(deepseek.vision).toBe(false)
    expect(imageRefusal(deepseek)).toBe(
      'deepseek/deepseek-v4-flash takes no images (the model catalog), so nothing was sent; use a vision model, or set "vision": true for it under "models" in settings',
    )
    // What the refusal spares: the real API answers 400 to the part (the fake keeps that rule).
    const raw = createOpenAiCompatible('openai-compatible', 'deepseek-v4-flash', {
      baseUrl: `${fake.url}/v1`,
      env,
      cwd: process.cwd(),
    })
    const error = await failure(raw.stream(request(shot), new AbortController().signal))
    expect(error.message).toContain('unknown variant `image_url`')
  })

  it('an unknown model is not sent images until settings say it has vision', () => {
    const baseUrl = 'http://127.0.0.1:9/v1'
    const local = createOpenAiCompatible('openai-compatible', 'my-local', { baseUrl, env, cwd: process.cwd() })
    expect(imageRefusal(local)).toContain('openai-compatible/my-local takes no images')
    const told = createOpenAiCompatible('openai-compatible', 'my-local', {
      baseUrl,
      env,
      cwd: process.cwd(),
      models: { 'openai-compatible/my-local': { vision: true } },
    })
    expect(imageRefusal(told)).toBeUndefined()
    expect(imageRefusal(createAnthropic('claude-sonnet-4-5', { env, cwd: process.cwd() }))).toBeUndefined()
  })
})
