import { afterEach, describe, expect, test } from 'vitest'
import type { Message } from '@keel/session'
import type { QueuedPrompt } from '@keel/agent'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const textOf = (message: Message | undefined) =>
  (message?.content ?? []).map((block) => ('text' in block ? block.text : '')).join('')

const userTexts = (messages: readonly Message[]) =>
  messages.filter((message) => message.role === 'user').map((message) => textOf(message))

describe('the prompt queue', () => {
  test('a steering message sent during a tool call reaches the next request of the same turn', async () => {
    keel = await makeKeel({
      steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.3; echo slept' } }] }, { text: 'Done.' }],
    })
    const agent = keel.agent()
    const turn = agent.prompt('edit the file')
    await waitFor(() => agent.session.events.some((e) => e.type === 'tool/call'), 'the tool call')
    const sent = agent.send('not that file, the other one')
    expect(sent.queued?.kind).toBe('steer')
    expect(agent.queue.list()).toHaveLength(1)
    const result = await turn
    expect(result).toMatchObject({ reason: 'completed', turn: 1, steps: 2 })
    expect(agent.queue.list()).toHaveLength(0)
    expect(userTexts(keel.model.requests[1]!.messages)).toEqual(['edit the file', 'not that file, the other one'])
    // It landed on the log inside step 2, after the tool result, as a steering message.
    const types = agent.session.events.map((e) => e.type)
    const steer = agent.session.events.find((e) => e.type === 'user/message' && e.data.message.source === 'steer')
    expect(steer?.seq).toBeGreaterThan(types.lastIndexOf('tool/result'))
    expect(types.indexOf('step/start', types.lastIndexOf('tool/result'))).toBeLessThan(steer!.seq)
    // A reopened session derives the same history.
    expect(userTexts(agent.session.deriveMessages())).toEqual(['edit the file', 'not that file, the other one'])
  })

  test('a steering message sent while the model writes its answer gets one more step', async () => {
    keel = await makeKeel({
      steps: [{ text: 'I will edit a.ts now.', delayMs: 40 }, { text: 'Editing b.ts instead.' }],
    })
    const agent = keel.agent()
    const turn = agent.prompt('edit the file')
    await waitFor(() => keel!.model.requests.length === 1, 'the first request')
    agent.send('use b.ts')
    const result = await turn
    expect(result).toMatchObject({ reason: 'completed', steps: 2, text: 'Editing b.ts instead.' })
    expect(userTexts(keel.model.requests[1]!.messages)).toEqual(['edit the file', 'use b.ts'])
  })

  test("a steering message sent after the turn's last step, as its end is written, is the next turn's prompt", async () => {
    keel = await makeKeel({ steps: [{ text: 'First.' }, { text: 'Second.' }] })
    const agent = keel.agent()
    // The end of a turn waits for its plugins (a snapshot, a sandbox to stop): a sentence typed then met no step.
    keel.ctx.on('agent/before-turn-end', async () => {
      if (keel!.model.requests.length === 1) agent.send('one more thing')
    })
    expect((await agent.prompt('one')).reason).toBe('completed')
    await waitFor(() => keel!.model.requests.length === 2 && !agent.queue.size, 'the next turn')
    expect(userTexts(keel.model.requests[1]!.messages)).toEqual(['one', 'one more thing'])
  })

  test('a follow-up runs as the next turn; idle, send starts a turn', async () => {
    keel = await makeKeel({ steps: [{ text: 'First.', delayMs: 30 }, { text: 'Second.' }] })
    const agent = keel.agent()
    const first = agent.send('one')
    expect(first.turn).toBeDefined()
    await waitFor(() => keel!.model.requests.length === 1, 'the first request')
    expect(agent.send('two', 'follow-up').queued?.kind).toBe('follow-up')
    expect(await first.turn).toMatchObject({ turn: 1, steps: 1, text: 'First.' })
    await agent.whenIdle()
    const starts = agent.session.events.filter((e) => e.type === 'turn/start')
    expect(starts).toHaveLength(2)
    expect(userTexts(keel.model.requests[1]!.messages)).toEqual(['one', 'two'])
    expect(agent.status).toBe('idle')
  })

  test('two senders at once: both arrive, in order, once each', async () => {
    keel = await makeKeel({
      steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.2' } }] }, { text: 'ok' }],
    })
    const agent = keel.agent()
    const turn = agent.prompt('go')
    await waitFor(() => agent.session.events.some((e) => e.type === 'tool/call'), 'the tool call')
    agent.send('from tab one')
    agent.send('from tab two')
    await turn
    expect(userTexts(agent.session.deriveMessages())).toEqual(['go', 'from tab one', 'from tab two'])
    expect(keel.model.requests).toHaveLength(2)
  })

  test('queued prompts can be taken back or edited before delivery, and every change is announced', async () => {
    keel = await makeKeel({
      steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.2' } }] }, { text: 'ok' }],
    })
    const agent = keel.agent()
    const seen: (readonly QueuedPrompt[])[] = []
    keel.ctx.on('agent/queue', (a, items) => {
      if (a === agent) seen.push(items)
    })
    const turn = agent.prompt('go')
    await waitFor(() => agent.session.events.some((e) => e.type === 'tool/call'), 'the tool call')
    const a = agent.send('wrong').queued!
    const b = agent.send('drop me').queued!
    expect(agent.queue.edit(a.id, [{ type: 'text', text: 'right' }])).toBe(true)
    expect(agent.queue.remove(b.id)?.id).toBe(b.id)
    await turn
    expect(userTexts(agent.session.deriveMessages())).toEqual(['go', 'right'])
    expect(agent.queue.edit(a.id, [{ type: 'text', text: 'late' }])).toBe(false)
    expect(seen.map((items) => items.map((item) => textOf({ role: 'user', content: item.content })))).toEqual([
      ['wrong'],
      ['wrong', 'drop me'],
      ['right', 'drop me'],
      ['right'],
      [],
    ])
  })

  test('the queue survives a cancel; the next prompt delivers the steering, then runs the follow-up', async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 30' } }] },
        { text: 'Started over.' },
        { text: 'Followed up.' },
      ],
    })
    const agent = keel.agent()
    const turn = agent.prompt('go')
    await waitFor(() => agent.session.events.some((e) => e.type === 'tool/call'), 'the tool call')
    agent.send('steer me')
    agent.send('then this', 'follow-up')
    agent.cancel()
    expect(await turn).toMatchObject({ reason: 'aborted' })
    await agent.whenIdle()
    expect(agent.queue.list().map((item) => item.kind)).toEqual(['steer', 'follow-up'])
    expect(agent.session.events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
    await agent.prompt('again')
    await agent.whenIdle()
    expect(agent.queue.list()).toHaveLength(0)
    const texts = userTexts(agent.session.deriveMessages())
    expect(texts.slice(-3)).toEqual(['again', 'steer me', 'then this'])
    expect(agent.session.events.filter((e) => e.type === 'turn/start')).toHaveLength(3)
  })
})
