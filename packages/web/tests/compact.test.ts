import { afterEach, expect, test } from 'vitest'
import * as compactionPlugin from '@keel/compaction'
import { ConversationStore } from '../src/client/store.ts'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'

let fixture: HostFixture | undefined
afterEach(async () => {
  await fixture?.dispose()
  fixture = undefined
})

test('session.compact summarises on demand; the next turn commits it and the transcript shows one marker', async () => {
  fixture = await hostFixture(
    [
      { text: 'first answer, which is long enough to be worth summarising later on' },
      { text: 'second answer' },
      { text: 'third answer' },
      { text: 'Summary: the user asked three questions and got three answers.' },
      { text: 'fourth answer' },
    ],
    { plugins: [[compactionPlugin, { auto: false, keepTurns: 1 }]] },
  )
  const f = fixture
  const { session } = await f.ok('session.create', {})
  for (const text of ['one', 'two', 'three']) {
    await f.ok('session.prompt', { sessionId: session.id, text })
    const agent = f.k.ctx.agents.get(session.id)!
    await agent.whenIdle()
  }
  const outcome = await f.ok('session.compact', { sessionId: session.id })
  expect(outcome).toMatchObject({ ok: true, applied: 'next-request' })
  expect(outcome.summarised).toBeGreaterThan(0)
  await f.ok('session.prompt', { sessionId: session.id, text: 'four' })
  const agent = f.k.ctx.agents.get(session.id)!
  await agent.whenIdle()
  await waitFor(() => agent.session.last?.type === 'turn/end', 'turn end')
  expect(agent.session.events.map((event) => event.type)).toContain('compaction/end')
  const page = await f.ok('session.history', { sessionId: session.id, maxMessages: 200 })
  const store = new ConversationStore(session.id, { history: (params) => f.ok('session.history', params) })
  await store.open()
  const snapshot = store.getSnapshot()
  const notices = snapshot.items.filter((item) => item.kind === 'notice')
  expect(notices).toHaveLength(1)
  expect(notices[0]).toMatchObject({
    tone: 'info',
    text: expect.stringMatching(/^Context compacted: \d+ messages summarised/),
  })
  expect(snapshot.items.some((item) => item.kind === 'user' && item.source === 'compaction')).toBe(true)
  expect(page.events.length).toBeGreaterThan(0)
})

test('session.compact without the compaction plugin is a clear error', async () => {
  fixture = await hostFixture([])
  const { session } = await fixture.ok('session.create', {})
  const result = await fixture.rpc('session.compact', { sessionId: session.id })
  expect(result).toEqual({
    ok: false,
    error: { code: 'unavailable', message: 'compaction is not loaded (add @keel/compaction to the composition)' },
  })
})
