// A /model switch mid-session: one history, three wire formats; each gets only what it accepts of the others'
// reasoning (no Anthropic signature or OpenAI encrypted item to DeepSeek, no DeepSeek reasoning to Anthropic, …).
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import type { Message } from '@keel/session/messages'
import { createAnthropic } from '../src/anthropic-provider.ts'
import { createOpenAiCompatible } from '../src/openai-provider.ts'
import { createResponses } from '../src/responses.ts'
import { collect, hello } from './stream-support.ts'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const rsItem = { type: 'reasoning', id: 'rs_9', summary: [], encrypted_content: 'ENC-OPENAI' }
const result = (id: string): Message => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId: id, content: [{ type: 'text', text: 'ok' }], isError: false }],
})
const history: Message[] = [
  { role: 'user', content: [{ type: 'text', text: 'go' }] },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'anthropic thought', signature: 'SIG-ANTHROPIC', origin: 'anthropic' },
      { type: 'reasoning', text: '', data: 'REDACTED-ANTHROPIC', origin: 'anthropic' },
      { type: 'tool-call', id: 'toolu_1', name: 'bash', arguments: '{}' },
    ],
  },
  result('toolu_1'),
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'DEEPSEEK-THOUGHT' },
      { type: 'tool-call', id: 'call_2', name: 'bash', arguments: '{}' },
    ],
  },
  result('call_2'),
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'openai summary', data: JSON.stringify(rsItem), origin: 'responses' },
      { type: 'tool-call', id: 'call_3', name: 'bash', arguments: '{}' },
    ],
  },
  result('call_3'),
]

describe('a history made by several providers', () => {
  it('goes to each provider with only the reasoning that provider accepts', async () => {
    // Lenient: the signatures here were never issued by this fake; the point is what each adapter leaves out.
    fake = await startFakeProvider([{ text: 'a' }, { text: 'b' }, { text: 'c' }], { lenient: true })
    const told: string[] = []
    const options = { baseUrl: `${fake.url}/v1`, cwd: process.cwd(), tell: (key: string) => told.push(key) }
    const request = { ...hello, messages: history }
    const signal = new AbortController().signal
    await collect(
      createOpenAiCompatible('deepseek', 'deepseek-v4-flash', { ...options, env: { DEEPSEEK_API_KEY: 'k' } }).stream(
        request,
        signal,
      ),
    )
    await collect(
      createAnthropic('claude-sonnet-5', { ...options, baseUrl: fake.url, env: { ANTHROPIC_API_KEY: 'k' } }).stream(
        request,
        signal,
      ),
    )
    await collect(createResponses('gpt-5.5', { ...options, env: { OPENAI_API_KEY: 'k' } }).stream(request, signal))
    const [deepseek, anthropic, openai] = fake.requests.map((r) => JSON.stringify(r.body))
    for (const foreign of ['SIG-ANTHROPIC', 'REDACTED-ANTHROPIC', 'ENC-OPENAI']) expect(deepseek).not.toContain(foreign)
    expect(deepseek).toContain('"reasoning_content":"DEEPSEEK-THOUGHT"')
    for (const foreign of ['DEEPSEEK-THOUGHT', 'ENC-OPENAI', 'openai summary']) expect(anthropic).not.toContain(foreign)
    expect(anthropic).toContain('"signature":"SIG-ANTHROPIC"')
    expect(anthropic).toContain('"type":"redacted_thinking","data":"REDACTED-ANTHROPIC"')
    for (const foreign of ['SIG-ANTHROPIC', 'REDACTED-ANTHROPIC', 'DEEPSEEK-THOUGHT', 'anthropic thought'])
      expect(openai).not.toContain(foreign)
    expect(openai).toContain(JSON.stringify(rsItem))
    // Each adapter says what it left out (the plugin says each key once): DeepSeek the redacted block it cannot carry,
    // Anthropic the unsigned thought, OpenAI everything but its own item.
    expect(told).toEqual([
      'left-out:deepseek/deepseek-v4-flash',
      'left-out:anthropic/claude-sonnet-5',
      'left-out:openai/gpt-5.5',
    ])
  })
})
