// The host's side of asking: asks pushed over SSE to every tab, listed again on the tail page, answered once.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import * as subagentPlugin from '@keel/subagent'
import type { ServerFrame } from '../src/protocol.ts'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'

let fixture: HostFixture | undefined
afterEach(async () => {
  await fixture?.dispose()
  fixture = undefined
})

const ASK_MODE = { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }

type AskFrame = Extract<ServerFrame, { type: 'permission/ask' }>
const asksIn = (frames: ServerFrame[]) => frames.filter((frame): frame is AskFrame => frame.type === 'permission/ask')
const settledIn = (frames: ServerFrame[]) => frames.filter((frame) => frame.type === 'permission/settled')

describe('permission asks over the web host', () => {
  test('every tab gets the ask; the tail page lists it; the first answer wins; the decision lands on the log', async () => {
    fixture = await hostFixture(
      [
        { toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo one > one.txt' } }] },
        { toolCalls: [{ id: 'call-2', name: 'bash', arguments: { command: 'rm -rf build' } }] },
        { text: 'Done.' },
      ],
      { shell: true, plugins: [[permissionsPlugin, ASK_MODE]] },
    )
    const f = fixture
    const tabA = await f.events()
    const tabB = await f.events()
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'go' })

    await waitFor(() => asksIn(tabA.frames).length === 1 && asksIn(tabB.frames).length === 1, 'the ask on both tabs')
    const ask = asksIn(tabA.frames)[0]!
    expect(ask).toMatchObject({
      sessionId: session.id,
      ask: { sessionId: session.id, callId: 'call-1', tool: 'bash', detail: 'echo one > one.txt' },
    })
    // A reload: the tail page carries the waiting ask, with everything the card shows.
    const page = await f.ok('session.history', { sessionId: session.id })
    expect(page.asks).toEqual([ask.ask])
    expect(page.events.some((entry) => entry.event.type === 'permission/request')).toBe(true)

    // Tab A answers first; tab B's late answer is refused.
    expect(
      await f.ok('permission.answer', { sessionId: session.id, callId: 'call-1', decision: 'allow', scope: 'once' }),
    ).toEqual({ accepted: true })
    expect(
      await f.ok('permission.answer', { sessionId: session.id, callId: 'call-1', decision: 'deny', scope: 'once' }),
    ).toEqual({ accepted: false })
    await waitFor(() => settledIn(tabB.frames).length === 1, 'the settled frame')
    expect(settledIn(tabB.frames)[0]).toEqual({
      type: 'permission/settled',
      sessionId: session.id,
      askSessionId: session.id,
      callId: 'call-1',
    })

    await waitFor(() => asksIn(tabB.frames).length === 2, 'the second ask')
    expect(
      await f.ok('permission.answer', { sessionId: session.id, callId: 'call-2', decision: 'deny', scope: 'once' }),
    ).toEqual({ accepted: true })
    const agent = f.k.ctx.agents.get(session.id)!
    await agent.whenIdle()
    expect((await f.ok('session.history', { sessionId: session.id })).asks).toEqual([])
    expect(
      agent.session.events.filter((event) => event.type === 'permission/decision').map((event) => event.data),
    ).toEqual([
      { callId: 'call-1', decision: 'allow', scope: 'once' },
      { callId: 'call-2', decision: 'deny', scope: 'once' },
    ])
    expect(existsSync(join(f.k.cwd, 'one.txt'))).toBe(true)
    // The decisions reached the tabs as log events too (the page marks the rows from them).
    expect(tabB.sessionEvents(session.id).filter((frame) => frame.event.type === 'permission/decision')).toHaveLength(2)
  })

  test('a cancelled turn settles its ask; bad answers are one-line errors', async () => {
    fixture = await hostFixture(
      [{ toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'rm -rf build' } }] }],
      { shell: true, plugins: [[permissionsPlugin, ASK_MODE]] },
    )
    const f = fixture
    const tab = await f.events()
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'go' })
    await waitFor(() => asksIn(tab.frames).length === 1, 'the ask')
    for (const [params, message] of [
      [{ sessionId: session.id, callId: 'call-1', decision: 'maybe', scope: 'once' }, 'decision: allow | deny'],
      [
        { sessionId: session.id, callId: 'call-1', decision: 'allow', scope: 'forever' },
        'scope: once | session | always',
      ],
      [
        { sessionId: session.id, callId: 'call-1', decision: 'allow', scope: 'always', file: 'elsewhere' },
        'file?: local | project',
      ],
      [{ sessionId: session.id, decision: 'allow', scope: 'once' }, 'callId must be a non-empty string'],
      [{ sessionId: '../x', callId: 'call-1', decision: 'allow', scope: 'once' }, 'sessionId must be a session id'],
    ] as const) {
      const result = await f.rpc('permission.answer', params)
      expect(result.ok).toBe(false)
      if (!result.ok) expect(result.error.message).toContain(message)
    }
    await f.ok('session.cancel', { sessionId: session.id })
    await waitFor(() => settledIn(tab.frames).length === 1, 'the settled frame')
    expect((await f.ok('session.history', { sessionId: session.id })).asks).toEqual([])
    expect(
      await f.ok('permission.answer', { sessionId: session.id, callId: 'call-1', decision: 'allow', scope: 'once' }),
    ).toEqual({ accepted: false })
  })

  test("a subagent's ask goes to its parent's page, and answering it lets the child go on", async () => {
    fixture = await hostFixture(
      [
        {
          when: 'parent work',
          toolCalls: [{ id: 'call-task', name: 'task', arguments: { description: 'Write it', prompt: 'child work' } }],
        },
        {
          when: 'child work',
          toolCalls: [{ id: 'call-child', name: 'bash', arguments: { command: 'echo child > child.txt' } }],
        },
        { when: 'child work', text: 'child done' },
        { when: 'parent work', text: 'all done' },
      ],
      {
        shell: true,
        plugins: [
          [permissionsPlugin, ASK_MODE],
          [subagentPlugin, { maxDepth: 1, maxConcurrent: 2 }],
        ],
      },
    )
    const f = fixture
    const tab = await f.events()
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'parent work' })
    await waitFor(() => asksIn(tab.frames).length === 1, 'the child ask', 15_000)
    const { sessionId, ask } = asksIn(tab.frames)[0]!
    expect(sessionId).toBe(session.id)
    expect(ask.sessionId).not.toBe(session.id)
    expect(ask).toMatchObject({ callId: 'call-child', parent: { sessionId: session.id, callId: 'call-task' } })
    expect((await f.ok('session.history', { sessionId: session.id })).asks).toEqual([ask])
    expect(
      await f.ok('permission.answer', {
        sessionId: ask.sessionId,
        callId: 'call-child',
        decision: 'allow',
        scope: 'once',
      }),
    ).toEqual({ accepted: true })
    const agent = f.k.ctx.agents.get(session.id)!
    await waitFor(() => agent.session.last?.type === 'turn/end', 'the parent turn', 15_000)
    expect(existsSync(join(f.k.cwd, 'child.txt'))).toBe(true)
    expect(settledIn(tab.frames)).toEqual([
      { type: 'permission/settled', sessionId: session.id, askSessionId: ask.sessionId, callId: 'call-child' },
    ])
  })

  test('without @keel/permissions nothing is asked and answering is unavailable', async () => {
    fixture = await hostFixture([])
    const { session } = await fixture.ok('session.create', {})
    expect((await fixture.ok('session.history', { sessionId: session.id })).asks).toBeUndefined()
    const result = await fixture.rpc('permission.answer', {
      sessionId: session.id,
      callId: 'c',
      decision: 'allow',
      scope: 'once',
    })
    expect(result).toMatchObject({ ok: false, error: { code: 'unavailable' } })
  })
})
