// Taking a queued prompt back (`queue.remove`) through the host's RPC: the agent's one queue loses it, every tab's
// `agent/queue` frame says so, and the page gets its text back; bad ids and sessions this host does not hold are refused.
import { afterEach, describe, expect, test } from 'vitest'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'

let fixture: HostFixture | undefined
afterEach(async () => {
  await fixture?.dispose()
  fixture = undefined
})

describe('queue.remove', () => {
  test('takes a queued prompt back before it is delivered; the queue frame follows; a second take finds nothing', async () => {
    const f = (fixture = await hostFixture([{ text: 'thinking', hang: true }]))
    const stream = await f.events()
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'start' })
    const agent = f.k.ctx.agents.get(session.id)!
    await waitFor(() => agent.status === 'running', 'turn start')
    const first = await f.ok('session.prompt', { sessionId: session.id, text: 'steer <b>me</b>' })
    const second = await f.ok('session.prompt', { sessionId: session.id, text: 'later', kind: 'follow-up' })
    const id = first.queued!.id
    expect(await f.ok('queue.remove', { sessionId: session.id, id })).toEqual({
      taken: { id, kind: 'steer', text: 'steer <b>me</b>' },
    })
    expect(agent.queue.list().map((item) => item.id)).toEqual([second.queued!.id])
    await waitFor(
      () => stream.frames.some((frame) => frame.type === 'agent/queue' && frame.items.length === 1),
      'queue frame after the take',
    )
    expect(stream.frames.filter((frame) => frame.type === 'agent/queue').at(-1)).toEqual({
      type: 'agent/queue',
      sessionId: session.id,
      items: [{ id: second.queued!.id, kind: 'follow-up', text: 'later' }],
    })
    // Gone already (taken by another tab, or delivered): nothing to take, nothing changes.
    expect(await f.ok('queue.remove', { sessionId: session.id, id })).toEqual({ taken: null })
    expect(agent.queue.size).toBe(1)
    await f.ok('session.cancel', { sessionId: session.id })
    await agent.whenIdle()
  })

  test('bad session ids, bad item ids and sessions this host does not hold are refused', async () => {
    const f = (fixture = await hostFixture([]))
    const { session } = await f.ok('session.create', {})
    expect(await f.rpc('queue.remove', { sessionId: '../x', id: 'q1' })).toMatchObject({
      ok: false,
      error: { code: 'invalid-session-id' },
    })
    expect(await f.rpc('queue.remove', { sessionId: 'no-such-session', id: 'q1' })).toMatchObject({
      ok: false,
      error: { code: 'not-found' },
    })
    for (const id of [undefined, '', 7, 'q1/../x', 'q'.repeat(65)])
      expect(await f.rpc('queue.remove', { sessionId: session.id, id }), String(id)).toMatchObject({
        ok: false,
        error: { code: 'bad-request' },
      })
    // A session of this folder run by another agent (here: opened beside the host; over a shared store: another
    // process) has no queue in this host.
    const other = f.k.agent()
    expect(await f.rpc('queue.remove', { sessionId: other.id, id: 'q1' })).toMatchObject({
      ok: false,
      error: { code: 'unavailable', message: expect.stringContaining('not open in this process') },
    })
    expect(await f.ok('queue.remove', { sessionId: session.id, id: 'q1' })).toEqual({ taken: null })
  })
})
