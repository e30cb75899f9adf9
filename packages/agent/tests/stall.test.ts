// Cancelling a turn whose provider has gone silent mid-answer ends it at once (not at the idle timeout), keeping the
// text already shown.
import { afterEach, describe, expect, test } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
let fake: FakeProvider | undefined
afterEach(async () => {
  await keel?.dispose()
  await fake?.close()
  keel = undefined
  fake = undefined
})

describe('a stalled stream in the loop', () => {
  test('cancel ends the turn aborted at once, with the partial text on the log', async () => {
    fake = await startFakeProvider([{ text: 'Half an answer', stallAfter: 4 }])
    keel = await makeKeel()
    // An idle timeout far longer than the test may take: only an immediate cancel lets the turn end.
    const model = await keel.ctx.llm.create('openai-compatible/m', {
      baseUrl: `${fake.url}/v1`,
      env: {},
      idleTimeoutMs: 600_000,
    })
    const agent = keel.agent({ model })
    let shown = ''
    keel.ctx.on('agent/delta', (_agent, delta) => {
      if (delta.kind === 'text') shown += delta.text
    })
    const turn = agent.prompt('answer slowly')
    await waitFor(() => shown === 'Half an answer', 'the streamed text')
    agent.cancel()
    const result = await turn
    expect(result.reason).toBe('aborted')
    const reply = agent.session.events.find((event) => event.type === 'assistant/message')
    expect(reply?.data.message.content).toEqual([{ type: 'text', text: 'Half an answer' }])
    expect(agent.session.last).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })
})
