import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import type { Message } from '@keel/session/messages'
import * as llm from '../src/index.ts'
import type { LlmRequest, ReasoningSettings } from '../src/index.ts'
import { createResponses, toResponsesInput } from '../src/responses.ts'
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

function adapter(model = 'gpt-5.3-codex', reasoning?: ReasoningSettings) {
  return createResponses(model, {
    baseUrl: `${fake!.url}/v1`,
    env: { OPENAI_API_KEY: 'sk-test' },
    cwd: process.cwd(),
    reasoning,
  })
}

const bash = {
  name: 'bash',
  description: 'Run a command',
  parameters: { type: 'object', properties: { command: { type: 'string' } } },
}

const turn: LlmRequest = { ...hello, tools: [bash], sessionId: 'session-1', maxTokens: 4000 }

describe('OpenAI Responses adapter against the fake server', () => {
  it('sends a stateless request with encrypted reasoning, effort, output budget and the session as cache key', async () => {
    await serve({
      reasoning: 'Two commands at once.',
      text: 'Running.',
      usage: { input: 900, output: 50, cacheRead: 512 },
    })
    const chunks = await collect(
      adapter('gpt-5.3-codex', { reasoningEffort: 'high' }).stream(turn, new AbortController().signal),
    )
    const sent = fake!.requests[0]!
    expect(sent.path).toBe('/v1/responses')
    expect(sent.headers.authorization).toBe('Bearer sk-test')
    expect(sent.body).toMatchObject({
      model: 'gpt-5.3-codex',
      instructions: 'You are terse.',
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'high', summary: 'auto' },
      max_output_tokens: 4000,
      prompt_cache_key: 'session-1',
      parallel_tool_calls: true,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
      tools: [
        { type: 'function', name: 'bash', description: 'Run a command', parameters: bash.parameters, strict: false },
      ],
    })
    expect(chunks.find((chunk) => chunk.type === 'usage')).toEqual({
      type: 'usage',
      usage: { input: 900, output: 50, cacheRead: 512, reasoning: 6 },
    })
    const message = assemble(chunks).message()
    expect(message.content[0]).toMatchObject({ type: 'reasoning', text: 'Two commands at once.', origin: 'responses' })
    expect(message.content[1]).toEqual({ type: 'text', text: 'Running.' })
  })

  it('leaves reasoning fields out for a model that does not reason', async () => {
    await serve({ text: 'ok' })
    await collect(adapter('gpt-4.1').stream(hello, new AbortController().signal))
    expect(fake!.requests[0]!.body.reasoning).toBeUndefined()
    expect(fake!.requests[0]!.body.include).toBeUndefined()
  })

  it('streams parallel function calls and sends the reasoning item back, unchanged, before them', async () => {
    await serve(
      {
        reasoning: 'List and test.',
        toolCalls: [
          { id: 'call_a', name: 'bash', arguments: { command: 'ls' } },
          { id: 'call_b', name: 'bash', arguments: { command: 'npm test' } },
        ],
      },
      { text: 'All green.' },
    )
    const first = assemble(await collect(adapter().stream(turn, new AbortController().signal)))
    expect(first.finish).toBe('tool-calls')
    const message = first.message()
    expect(message.content.filter((block) => block.type === 'tool-call')).toEqual([
      { type: 'tool-call', id: 'call_a', name: 'bash', arguments: '{"command":"ls"}' },
      { type: 'tool-call', id: 'call_b', name: 'bash', arguments: '{"command":"npm test"}' },
    ])
    const results: Message = {
      role: 'tool',
      content: ['call_a', 'call_b'].map((id) => ({
        type: 'tool-result' as const,
        toolCallId: id,
        content: [{ type: 'text' as const, text: `out ${id}` }],
        isError: false,
      })),
    }
    const second = await collect(
      adapter().stream({ ...turn, messages: [...turn.messages, message, results] }, new AbortController().signal),
    )
    expect(assemble(second).message().content).toEqual([{ type: 'text', text: 'All green.' }])
    const input = fake!.requests[1]!.body.input
    const issued = fake!.requests.length && input[1]
    // Exactly the item the first reply ended with (its id, summary and encrypted content).
    expect(issued).toMatchObject({
      type: 'reasoning',
      id: 'rs_1',
      summary: [{ type: 'summary_text', text: 'List and test.' }],
    })
    expect(issued.encrypted_content).toMatch(/^enc-1-/)
    expect(input.slice(2).map((item: { type: string; call_id: string }) => `${item.type} ${item.call_id}`)).toEqual([
      'function_call call_a',
      'function_call call_b',
      'function_call_output call_a',
      'function_call_output call_b',
    ])
  })

  it('the strict fake answers as OpenAI does to dropped reasoning and to an output without its call; one line, not retried', async () => {
    await serve({ reasoning: 'Think.', toolCalls: [{ id: 'call_x', name: 'bash', arguments: {} }] })
    const message = assemble(await collect(adapter().stream(turn, new AbortController().signal))).message()
    const result: Message = {
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'call_x', content: [], isError: false }],
    }
    const dropped = { ...message, content: message.content.filter((block) => block.type !== 'reasoning') }
    const ctx = new Context()
    ctx.plugin(llm, { retryAttempts: 3, retryBaseDelayMs: 10 })
    const model = await ctx.llm.create('openai/gpt-5.3-codex', {
      baseUrl: `${fake!.url}/v1`,
      env: { OPENAI_API_KEY: 'k' },
    })
    const error = await failure(
      model.stream({ ...turn, messages: [...turn.messages, dropped, result] }, new AbortController().signal),
    )
    expect(error.kind).toBe('bad-request')
    expect(error.message).toBe(
      `openai: request rejected for gpt-5.3-codex at ${fake!.url}/v1/responses (400: Item 'call_x' of type 'function_call' was provided without its required 'reasoning' item: 'rs_1'.)`,
    )
    expect(fake!.requests).toHaveLength(2) // never retried
    const orphan = await failure(
      adapter().stream({ ...turn, messages: [...turn.messages, result] }, new AbortController().signal),
    )
    expect(orphan.message).toContain('No tool call found for function call output with call_id call_x.')
  })

  it('openai/* speaks Responses through ctx.llm; `api: chat` in settings keeps chat completions', async () => {
    await serve({ text: 'a' }, { text: 'b' })
    const ctx = new Context()
    ctx.plugin(llm, { retryAttempts: 1, retryBaseDelayMs: 10, models: { 'openai/gpt-4o': { api: 'chat' } } })
    const options = { baseUrl: `${fake!.url}/v1`, env: { OPENAI_API_KEY: 'k' } }
    await collect((await ctx.llm.create('openai/gpt-5.3-codex', options)).stream(hello, new AbortController().signal))
    await collect((await ctx.llm.create('openai/gpt-4o', options)).stream(hello, new AbortController().signal))
    expect(fake!.requests.map((request) => request.path)).toEqual(['/v1/responses', '/v1/chat/completions'])
  })
})

describe('toResponsesInput', () => {
  const deepFreeze = <T>(value: T): T => {
    if (value && typeof value === 'object') {
      for (const item of Object.values(value)) deepFreeze(item)
      Object.freeze(value)
    }
    return value
  }
  const history = (): Message[] => [
    { role: 'user', content: [{ type: 'text', text: 'look' }] },
    {
      role: 'assistant',
      content: [
        {
          type: 'reasoning',
          text: '',
          origin: 'responses',
          data: JSON.stringify({ type: 'reasoning', id: 'rs_1', summary: [] }),
        },
        { type: 'reasoning', text: 'from another provider' },
        { type: 'tool-call', id: 'c1', name: 'read', arguments: '{}' },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          isError: false,
          content: [
            { type: 'text', text: 'seen' },
            { type: 'image', mediaType: 'image/png', data: 'AAAA' },
          ],
        },
      ],
    },
    { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
  ]

  it("converts a session's frozen messages once: a later request reuses their items, and says what it left out each time", () => {
    const frozen = deepFreeze(history())
    let left = 0
    const first = toResponsesInput(frozen, () => left++)
    const second = toResponsesInput(frozen, () => left++)
    expect(second).toEqual(first)
    expect(left).toBe(2) // the other provider's reasoning, once per request
    expect(second[1]).toBe(first[1]) // the reasoning item, parsed once
    expect(first.map((item) => ('type' in item && item.type) || ('role' in item && item.role))).toEqual([
      'user',
      'reasoning',
      'function_call',
      'function_call_output',
      'user', // the tool's image, after the results
      'user',
    ])
    // A caller's mutable messages are converted again each time: a change to them shows.
    const mutable = history()
    const once = toResponsesInput(mutable)
    expect(toResponsesInput(mutable)[1]).not.toBe(once[1])
    expect(toResponsesInput(mutable)).toEqual(first)
  })
})
