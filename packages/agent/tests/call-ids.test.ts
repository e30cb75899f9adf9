// A model that repeats a tool-call id (within one reply, or across replies) must not get two results under one id:
// each call runs once under an id of its own, and the next request pairs every call with its result.
import { afterEach, describe, expect, test } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'
import type { Agent } from '../src/index.ts'

let keel: Keel | undefined
let fake: FakeProvider | undefined
afterEach(async () => {
  await keel?.dispose()
  await fake?.close()
  keel = undefined
  fake = undefined
})

/** Every call on the log has exactly one result, ids are unique, and the surface pairs them the same way. */
function expectOneResultPerCall(agent: Agent): string[] {
  const events = agent.session.events
  const calls = events.filter((event) => event.type === 'tool/call').map((event) => event.data.callId)
  const results = events.filter((event) => event.type === 'tool/result').map((event) => event.data.callId)
  expect(new Set(calls).size).toBe(calls.length)
  expect(results).toEqual(calls)
  const assistantIds = events.flatMap((event) =>
    event.type === 'assistant/message'
      ? event.data.message.content.flatMap((block) => (block.type === 'tool-call' ? [block.id] : []))
      : [],
  )
  expect(assistantIds).toEqual(calls)
  return calls
}

describe('duplicate tool-call ids', () => {
  test('scripted: two calls with one id in a reply, and the id again in the next reply, each run once under its own id', async () => {
    keel = await makeKeel({
      steps: [
        {
          toolCalls: [
            { id: 'dup', name: 'bash', arguments: { command: 'echo first' } },
            { id: 'dup', name: 'bash', arguments: { command: 'echo second' } },
          ],
        },
        { toolCalls: [{ id: 'dup', name: 'bash', arguments: { command: 'echo third' } }] },
        { text: 'done' },
      ],
    })
    const agent = keel.agent()
    expect((await agent.prompt('run them')).reason).toBe('completed')
    const ids = expectOneResultPerCall(agent)
    expect(ids).toEqual(['dup', 'dup_2', 'dup_3'])
    const outputs = agent.session.events
      .filter((event) => event.type === 'tool/result')
      .map((event) => textOfContent(event.data.content).split('\n')[0])
    expect(outputs).toEqual(['first', 'second', 'third'])

    // What the model is sent next: each call followed by the result under the same id.
    const last = keel.model.requests.at(-1)!.messages
    const sentCalls = last.flatMap((m) =>
      m.role === 'assistant' ? m.content.flatMap((b) => (b.type === 'tool-call' ? [b.id] : [])) : [],
    )
    const sentResults = last.flatMap((m) => (m.role === 'tool' ? m.content.map((b) => b.toolCallId) : []))
    expect(sentCalls).toEqual(ids)
    expect(sentResults).toEqual(ids)
  })

  test('a resumed session keeps ids unique against the calls already on its log', async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ id: 'same', name: 'bash', arguments: { command: 'echo a' } }] },
        { text: 'one' },
        { toolCalls: [{ id: 'same', name: 'bash', arguments: { command: 'echo b' } }] },
        { text: 'two' },
      ],
    })
    const first = keel.agent()
    await first.prompt('turn one')
    const id = first.id
    keel.ctx.agents.close(first)
    const { agent } = keel.ctx.agents.resume(id, { model: keel.model })
    expect((await agent.prompt('turn two')).reason).toBe('completed')
    expect(expectOneResultPerCall(agent)).toEqual(['same', 'same_2'])
  })

  test.each(['openai-compatible', 'anthropic'] as const)(
    '%s wire format: the ids the provider sees next are unique and paired',
    async (flavor) => {
      fake = await startFakeProvider([
        {
          text: 'Two at once.',
          toolCalls: [
            { id: 'call_x', name: 'bash', arguments: { command: 'echo left' } },
            { id: 'call_x', name: 'bash', arguments: { command: 'echo right' } },
          ],
        },
        { text: 'Both done.' },
      ])
      keel = await makeKeel()
      const model =
        flavor === 'anthropic'
          ? await keel.ctx.llm.create('anthropic/claude-sonnet-5', {
              baseUrl: fake.url,
              env: { ANTHROPIC_API_KEY: 'k' },
            })
          : await keel.ctx.llm.create('openai-compatible/m', { baseUrl: `${fake.url}/v1`, env: {} })
      const agent = keel.agent({ model })
      expect((await agent.prompt('run both')).reason).toBe('completed')
      expect(expectOneResultPerCall(agent)).toEqual(['call_x', 'call_x_2'])
      const body = fake.requests[1]!.body
      if (flavor === 'anthropic') {
        const uses = body.messages.flatMap((m: any) =>
          Array.isArray(m.content) ? m.content.filter((b: any) => b.type === 'tool_use').map((b: any) => b.id) : [],
        )
        const results = body.messages.flatMap((m: any) =>
          Array.isArray(m.content)
            ? m.content
                .filter((b: any) => b.type === 'tool_result')
                .map((b: any) => [b.tool_use_id, b.content[0].text.split('\n')[0]])
            : [],
        )
        expect(uses).toEqual(['call_x', 'call_x_2'])
        expect(results).toEqual([
          ['call_x', 'left'],
          ['call_x_2', 'right'],
        ])
      } else {
        const calls = body.messages.flatMap((m: any) => m.tool_calls?.map((c: any) => c.id) ?? [])
        const results = body.messages
          .filter((m: any) => m.role === 'tool')
          .map((m: any) => [m.tool_call_id, m.content.split('\n')[0]])
        expect(calls).toEqual(['call_x', 'call_x_2'])
        expect(results).toEqual([
          ['call_x', 'left'],
          ['call_x_2', 'right'],
        ])
      }
    },
  )
})
