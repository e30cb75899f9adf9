import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import type { ScriptStep } from '@keel/llm'
import { isLoopback, resolveBind } from '../src/bind.ts'
import type { HistoryPage } from '../src/protocol.ts'
import { tokenMatches } from '../src/token.ts'
import { WebHost } from '../src/host.ts'
import { hostFixture, makeHost, openEvents, TOKEN, waitFor, type HostFixture } from './host-support.ts'

const PLAN = [
  { content: 'Read the code', status: 'completed' as const },
  { content: 'Write the fix', status: 'in_progress' as const },
  { content: 'Run the tests', status: 'pending' as const },
]

let fixture: HostFixture | undefined
afterEach(async () => {
  await fixture?.dispose()
  fixture = undefined
})

async function setup(steps: ScriptStep[] = [], options = {}): Promise<HostFixture> {
  fixture = await hostFixture(steps, options)
  return fixture
}

/** Runs one prompt through the host and waits for its turn to end. */
async function promptAndWait(f: HostFixture, sessionId: string, text: string): Promise<void> {
  await f.ok('session.prompt', { sessionId, text })
  const agent = f.k.ctx.agents.get(sessionId)!
  await agent.whenIdle()
  await waitFor(() => agent.session.last?.type === 'turn/end', 'turn end')
}

describe('access', () => {
  test('every API call needs the token as a header (Authorization or X-Keel-Token); a cookie or the query is 401', async () => {
    const f = await setup()
    const app = f.host.app
    const post = (headers: Record<string, string>, query = '') =>
      app.request(`/api/session.list${query}`, { method: 'POST', headers, body: '{}' })
    const denied = await post({})
    expect(denied.status).toBe(401)
    expect(await denied.json()).toEqual({
      ok: false,
      error: { code: 'unauthorized', message: expect.stringContaining('token') },
    })
    expect((await post({ authorization: `Bearer ${TOKEN.slice(0, -1)}x` })).status).toBe(401) // same length, one char off
    expect((await post({ authorization: 'Bearer ' })).status).toBe(401)
    expect((await post({ authorization: `Bearer ${TOKEN}` })).status).toBe(200)
    expect((await post({ 'x-keel-token': TOKEN })).status).toBe(200)
    // Cookies go to every port of 127.0.0.1, so a token in one would reach any local server: none is read.
    expect((await post({ cookie: `keel_token_80=${TOKEN}` })).status).toBe(401)
    expect((await post({ cookie: `keel_token=${TOKEN}` })).status).toBe(401)
    expect((await post({}, `?token=${TOKEN}`)).status).toBe(401)
    expect((await app.request('/api/events')).status).toBe(401)
    expect((await app.request(`/api/events?token=${TOKEN}`)).status).toBe(401)
  })

  test('token comparison is exact', () => {
    expect(tokenMatches('abc', 'abc')).toBe(true)
    for (const other of ['abd', 'ab', 'abcd', '', 'ABC']) expect(tokenMatches('abc', other)).toBe(false)
    expect(tokenMatches('abc', undefined)).toBe(false)
  })

  test('binds 127.0.0.1:4317 by default; other addresses are refused unless explicitly allowed', () => {
    expect(resolveBind({})).toEqual({ host: '127.0.0.1', port: 4317, remote: false })
    expect(resolveBind({ port: '0' }).port).toBe(0)
    expect(resolveBind({ host: 'localhost' }).remote).toBe(false)
    expect(resolveBind({ host: '::1' }).remote).toBe(false)
    expect(resolveBind({ host: '[::1]' }).host).toBe('::1')
    for (const host of ['0.0.0.0', '::', '192.168.1.20', 'example.com']) {
      expect(() => resolveBind({ host }, {})).toThrow(
        /refusing to serve on .*not a loopback address.*KEEL_SERVE_ALLOW_REMOTE=1/,
      )
    }
    expect(resolveBind({ host: '0.0.0.0' }, { KEEL_SERVE_ALLOW_REMOTE: '1' })).toEqual({
      host: '0.0.0.0',
      port: 4317,
      remote: true,
    })
    for (const port of ['abc', '-1', '70000', '1.5', ''])
      expect(() => resolveBind({ port }, {})).toThrow(/--port must be a number/)
    expect(() => resolveBind({ host: 'a b' }, {})).toThrow(/not a host/)
    expect(isLoopback('127.8.0.1')).toBe(true)
    expect(isLoopback('::ffff:127.0.0.1')).toBe(true)
    expect(isLoopback('128.0.0.1')).toBe(false)
  })

  test('the page is served with a content security policy; paths outside the built client are not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-web-client-'))
    try {
      writeFileSync(join(dir, 'index.html'), '<!doctype html><title>t</title>')
      const f = await setup()
      const host = makeHost(f.k, { clientDir: dir })
      const page = await host.app.request('/')
      expect(page.status).toBe(200)
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
      expect(page.headers.get('x-content-type-options')).toBe('nosniff')
      for (const path of ['/../package.json', '/%2e%2e/package.json', '/.hidden', '/assets/../../x']) {
        expect((await host.app.request(path)).status, path).toBe(404)
      }
      await host.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('before the plugins are up', () => {
  test('a host without a context serves the page; the API waits for attach()', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-web-client-'))
    try {
      writeFileSync(join(dir, 'index.html'), '<!doctype html><title>t</title>')
      const host = new WebHost({ cwd: dir, token: TOKEN, clientDir: dir })
      host.listening('127.0.0.1', 80)
      const page = await host.app.request('/')
      expect(page.status).toBe(200)
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
      // The token is still checked at once; a right one waits.
      const denied = await host.app.request('/api/session.list', { method: 'POST', body: '{}' })
      expect(denied.status).toBe(401)
      let answered = false
      const listing = Promise.resolve(
        host.app.request('/api/session.list', {
          method: 'POST',
          body: '{}',
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      ).then(async (response) => {
        answered = true
        return response.json()
      })
      await new Promise((done) => setTimeout(done, 100))
      expect(answered).toBe(false)
      const f = await setup()
      host.attach(f.k.ctx, f.k.model)
      expect(await listing).toEqual({ ok: true, value: { sessions: [], cwd: dir, all: false } })
      expect(() => host.attach(f.k.ctx, f.k.model)).toThrow(/attached already/)
      await host.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a host closed before it was attached ends quietly', async () => {
    const host = new WebHost({ cwd: tmpdir(), token: TOKEN })
    host.listening('127.0.0.1', 80)
    await host.close()
  })
})

describe('RPC', () => {
  test('session ids that are not ids are refused with a clear error', async () => {
    const f = await setup()
    for (const method of ['session.history', 'session.prompt', 'session.cancel'] as const) {
      for (const sessionId of ['../../etc/passwd', 'a/b', '', ' x', 42, null]) {
        const result = await f.rpc(method, { sessionId, text: 'hi' })
        expect(result, `${method} ${JSON.stringify(sessionId)}`).toEqual({
          ok: false,
          error: { code: 'invalid-session-id', message: expect.stringMatching(/^sessionId must be a session id/) },
        })
      }
      expect(await f.rpc(method, { text: 'hi' })).toMatchObject({
        ok: false,
        error: { code: 'invalid-session-id', message: expect.stringContaining('got nothing') },
      })
    }
    expect(await f.rpc('session.history', { sessionId: 'no-such-session' })).toMatchObject({
      ok: false,
      error: { code: 'not-found' },
    })
    expect(await f.rpc('session.prompt', { sessionId: 'no-such-session', text: 'hi' })).toMatchObject({
      ok: false,
      error: { code: 'not-found' },
    })
  })

  test('unknown methods, malformed bodies and bad paging parameters are refused', async () => {
    const f = await setup()
    const unknown = await f.host.app.request('/api/session.delete', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{}',
    })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({
      ok: false,
      error: { code: 'unknown-method', message: expect.stringContaining('session.list') },
    })
    for (const method of ['constructor', '__proto__', 'toString']) {
      expect(await f.rpc(method as 'session.list', {})).toMatchObject({ ok: false, error: { code: 'unknown-method' } })
    }
    const notJson = await f.host.app.request('/api/session.list', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{nope',
    })
    expect(notJson.status).toBe(400)
    expect(await f.rpc('session.list', [1, 2] as never)).toMatchObject({ ok: false, error: { code: 'bad-request' } })
    const { session } = await f.ok('session.create', {})
    for (const params of [
      { beforeSeq: -1 },
      { beforeSeq: 1.5 },
      { maxMessages: 0 },
      { maxMessages: 501 },
      { maxMessages: '5' },
    ]) {
      expect(
        await f.rpc('session.history', { sessionId: session.id, ...params }),
        JSON.stringify(params),
      ).toMatchObject({ ok: false, error: { code: 'bad-request' } })
    }
    expect(await f.rpc('session.prompt', { sessionId: session.id, text: '   ' })).toMatchObject({
      ok: false,
      error: { code: 'bad-request' },
    })
  })

  test('a prompt runs on an agent the host holds; the stream carries its events with seqs, live deltas and projections', async () => {
    const f = await setup([
      { text: 'Planning now.', delayMs: 20, toolCalls: [{ name: 'todo_write', arguments: { todos: PLAN } }] },
      { text: 'All done.' },
    ])
    const stream = await f.events()
    const { session } = await f.ok('session.create', {})
    expect(stream.frames).toContainEqual({
      type: 'session/created',
      session: expect.objectContaining({ id: session.id, live: true }),
    })
    expect(await f.ok('session.prompt', { sessionId: session.id, text: 'fix the bug' })).toEqual({ accepted: true })
    // One running turn per session: a prompt sent meanwhile joins the agent's queue, as steering by default.
    expect(await f.ok('session.prompt', { sessionId: session.id, text: 'again' })).toEqual({
      accepted: true,
      queued: { id: expect.any(String), kind: 'steer' },
    })
    expect(stream.frames).toContainEqual({
      type: 'agent/queue',
      sessionId: session.id,
      items: [{ id: expect.any(String), kind: 'steer', text: 'again' }],
    })
    expect(await f.rpc('session.prompt', { sessionId: session.id, text: 'x', kind: 'later' as never })).toMatchObject({
      ok: false,
      error: { code: 'bad-request' },
    })
    await waitFor(
      () => stream.sessionEvents(session.id).some((frame) => frame.event.type === 'turn/end'),
      'turn end frame',
    )
    const events = stream.sessionEvents(session.id)
    expect(events.map((frame) => frame.event.seq)).toEqual(events.map((_, i) => i))
    const call = events.find((frame) => frame.event.type === 'tool/call')!
    expect(call.view).toEqual({ title: 'Update plan', kind: 'other' })
    const deltas = stream.frames.filter((frame) => frame.type === 'agent/delta' && frame.sessionId === session.id)
    expect(
      deltas
        .map((frame) => (frame.type === 'agent/delta' && frame.delta.kind === 'text' ? frame.delta.text : ''))
        .join(''),
    ).toBe('Planning now.All done.')
    const write = events.find((frame) => frame.event.type === 'todo/write')!
    expect(stream.frames).toContainEqual({
      type: 'session/projection',
      sessionId: session.id,
      key: 'todos',
      value: PLAN,
      seq: write.event.seq,
    })
    expect(stream.frames).toContainEqual({ type: 'agent/status', sessionId: session.id, status: 'running' })
    const listed = await f.ok('session.list', {})
    expect(listed.sessions.find((s) => s.id === session.id)).toMatchObject({ title: 'fix the bug', live: true })
  })

  test('a new event stream starts with where each live session ends', async () => {
    const f = await setup([{ text: 'hi' }])
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'hello')
    const stream = await openEvents(f.host)
    const hello = stream.frames.find((frame) => frame.type === 'hello')
    expect(hello).toEqual({
      type: 'hello',
      sessions: [{ sessionId: session.id, lastSeq: f.k.ctx.sessions.get(session.id)!.seq - 1, running: false }],
      notify: {},
    })
    await stream.close()
  })

  test("the hello frame carries the settings' notify and notifyWhen, which the page's call back follows", async () => {
    const f = await setup([], { host: { notify: { notify: 'off', notifyWhen: 'always' } } })
    const stream = await openEvents(f.host)
    expect(stream.frames.find((frame) => frame.type === 'hello')).toMatchObject({
      notify: { notify: 'off', notifyWhen: 'always' },
    })
    await stream.close()
    // Given to attach() when the host listened before the boot (keel serve without --resume).
    const early = new WebHost({ cwd: f.k.cwd, token: TOKEN })
    early.listening('127.0.0.1', 80)
    early.attach(f.k.ctx, f.k.model, { notify: 'bell' })
    const late = await openEvents(early)
    expect(late.frames.find((frame) => frame.type === 'hello')).toMatchObject({ notify: { notify: 'bell' } })
    await late.close()
    await early.close()
  })

  test('cancel ends the running turn', async () => {
    const f = await setup([{ text: 'thinking', hang: true }])
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'wait forever' })
    const agent = f.k.ctx.agents.get(session.id)!
    await waitFor(() => agent.session.events.some((event) => event.type === 'user/message'), 'turn start')
    expect(await f.ok('session.cancel', { sessionId: session.id })).toEqual({ cancelled: true })
    await agent.whenIdle()
    await waitFor(() => agent.session.last?.type === 'turn/end', 'turn end')
    expect(agent.session.last).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    expect(await f.ok('session.cancel', { sessionId: session.id })).toEqual({ cancelled: false })
  })

  test('closing the host lets work that outlived a turn land: agent/before-close is awaited, then the agent closes', async () => {
    const f = await setup([])
    const { session } = await f.ok('session.create', {})
    const seen: { id: string; open: boolean }[] = []
    f.k.ctx.on('agent/before-close', async (closing) => {
      await new Promise((done) => setTimeout(done, 50))
      seen.push({ id: closing.id, open: f.k.ctx.agents.get(closing.id) !== undefined })
    })
    await f.host.close()
    expect(seen).toEqual([{ id: session.id, open: true }])
    expect(f.k.ctx.agents.get(session.id)).toBeUndefined()
  })

  test('a persisted session that is not open is resumed by its first prompt and continues its numbering', async () => {
    const f = await setup([{ text: 'first answer' }, { text: 'second answer' }])
    const agent = f.k.agent()
    await agent.prompt('first')
    const id = agent.id
    const seq = agent.session.seq
    f.k.ctx.agents.close(agent)
    expect(f.k.ctx.sessions.get(id)).toBeUndefined()
    await f.ok('session.prompt', { sessionId: id, text: 'second' })
    const resumed = f.k.ctx.agents.get(id)!
    await resumed.whenIdle()
    expect(resumed.session.events[seq]).toMatchObject({ seq, type: 'turn/start', data: { turn: 2 } })
    const page = await f.ok('session.history', { sessionId: id })
    expect(page.events.at(-1)?.event).toMatchObject({ type: 'turn/end', data: { turn: 2, reason: 'completed' } })
  })

  test("a subagent's session is read-only here", async () => {
    const f = await setup()
    const child = f.k.ctx.sessions.create({ cwd: f.k.cwd, parent: { sessionId: 'parent-session', callId: 'call_1' } })
    f.k.ctx.sessions.close(child)
    expect(await f.rpc('session.prompt', { sessionId: child.id, text: 'hi' })).toMatchObject({
      ok: false,
      error: { code: 'read-only', message: expect.stringContaining('parent-session') },
    })
    // The refusal left the session closed (its lock released): it can be opened again.
    expect(() => f.k.ctx.sessions.open(child.id)).not.toThrow()
  })
})

describe('history', () => {
  /** One turn: a plan first, then enough steps that the plan's write falls outside a small tail page. */
  const longTurn: ScriptStep[] = [
    { toolCalls: [{ name: 'todo_write', arguments: { todos: PLAN } }] },
    ...[1, 2, 3, 4].map((i) => ({ text: `step ${i}`, toolCalls: [{ name: 'no_such_tool', arguments: { i } }] })),
    { text: 'Finished.' },
  ]

  async function pagesOf(f: HostFixture, sessionId: string, maxMessages: number): Promise<HistoryPage[]> {
    const pages: HistoryPage[] = []
    let beforeSeq: number | undefined
    for (;;) {
      const page = await f.ok('session.history', {
        sessionId,
        maxMessages,
        ...(beforeSeq !== undefined ? { beforeSeq } : {}),
      })
      pages.push(page)
      if (!page.hasMore) return pages
      beforeSeq = page.events[0]!.event.seq
    }
  }

  test('the tail page carries the standing plan over the whole log, live and from the file; older pages never do', async () => {
    const f = await setup(longTurn)
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'do the work')
    const live = await pagesOf(f, session.id, 2)
    const lastSeq = f.k.ctx.sessions.get(session.id)!.seq - 1
    const [tail, ...older] = live
    expect(tail!.events.some((entry) => entry.event.type === 'todo/write')).toBe(false)
    expect(tail!.projections).toEqual({ asOfSeq: lastSeq, values: expect.objectContaining({ todos: PLAN }) })
    expect(tail!.running).toBe(false)
    expect(older.length).toBeGreaterThan(0)
    for (const page of older) {
      expect(page.projections).toBeUndefined()
      expect(page.running).toBeUndefined()
    }
    // Tool calls come with the tool's own view.
    const calls = live
      .slice()
      .reverse()
      .flatMap((page) => page.events)
      .filter((entry) => entry.event.type === 'tool/call')
    expect(calls.map((entry) => entry.view?.title)).toEqual([
      'Update plan',
      'no_such_tool',
      'no_such_tool',
      'no_such_tool',
      'no_such_tool',
    ])

    // Close the agent: the same pages now come from the file's tail, with the plan found by reading backwards.
    await f.host.close()
    const host = makeHost(f.k)
    f.host = host
    expect(f.k.ctx.sessions.get(session.id)).toBeUndefined()
    const cold = await pagesOf(f, session.id, 2)
    expect(cold.map((page) => page.events)).toEqual(live.map((page) => page.events))
    expect(cold[0]!.projections).toEqual({ asOfSeq: lastSeq, values: { todos: PLAN } })
    for (const page of cold.slice(1)) expect(page.projections).toBeUndefined()
  })

  test('after the next turn starts no plan stands: the tail page says todos null', async () => {
    const f = await setup([
      { toolCalls: [{ name: 'todo_write', arguments: { todos: PLAN } }] },
      { text: 'ok' },
      { text: 'second turn' },
    ])
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'one')
    expect((await f.ok('session.history', { sessionId: session.id })).projections?.values.todos).toEqual(PLAN)
    await promptAndWait(f, session.id, 'two')
    const tail = await f.ok('session.history', { sessionId: session.id })
    expect(tail.projections?.values).toHaveProperty('todos', null)
  })

  test('without the todo plugin the tail page has no todos key (the capability is absent)', async () => {
    const f = await setup([{ text: 'hi' }], { todo: false })
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'hello')
    const tail = await f.ok('session.history', { sessionId: session.id })
    expect(tail.projections).toBeDefined()
    expect(tail.projections!.values).not.toHaveProperty('todos')
  })

  test('an older page request inside a step is refused', async () => {
    const f = await setup(longTurn)
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'do the work')
    const result = f.k.ctx.sessions.get(session.id)!.events.find((event) => event.type === 'tool/result')!
    expect(await f.rpc('session.history', { sessionId: session.id, beforeSeq: result.seq })).toMatchObject({
      ok: false,
      error: { code: 'bad-request', message: expect.stringContaining('not a page start') },
    })
  })
})

// @keel/subagent is built alongside this package; these run once it is in the tree.
const SUBAGENT = '@keel/subagent' // named indirectly so the typecheck does not need the package's sources
const subagentPlugin = (await import(SUBAGENT).catch(() => undefined)) as { apply?: unknown } | undefined

describe.skipIf(typeof subagentPlugin?.apply !== 'function')('with subagents', () => {
  test("a running child's plan reaches the stream as subagentPlans; the parent's tail page carries the final runs", async () => {
    const childPlan = [
      { content: 'Look around', status: 'in_progress' as const },
      { content: 'Report back', status: 'pending' as const },
    ]
    const f = await setup(
      [
        {
          when: 'parent work',
          toolCalls: [{ name: 'task', arguments: { description: 'Survey', prompt: 'child work' } }],
        },
        { when: 'child work', toolCalls: [{ name: 'todo_write', arguments: { todos: childPlan } }] },
        { when: 'child work', text: 'child done', delayMs: 20 },
        { when: 'parent work', text: 'all done' },
      ],
      { plugins: [[subagentPlugin, { maxDepth: 1, maxConcurrent: 2 }]] },
    )
    const stream = await f.events()
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'parent work')
    const callId = stream.sessionEvents(session.id).find((frame) => frame.event.type === 'tool/call')!.event.data as {
      callId: string
    }
    const frames = stream.frames.filter(
      (frame) => frame.type === 'session/projection' && frame.sessionId === session.id && frame.key === 'subagentPlans',
    )
    expect(
      frames.some(
        (frame) =>
          frame.type === 'session/projection' &&
          (frame.value as Record<string, { todos: unknown }>)[callId.callId]?.todos !== null,
      ),
    ).toBe(true)
    const tail = await f.ok('session.history', { sessionId: session.id })
    expect(tail.projections?.values.subagentPlans).toMatchObject({
      [callId.callId]: { description: 'Survey', status: 'completed', todos: childPlan },
    })
  })
})

describe('model and usage on the tail page', () => {
  const replies: ScriptStep[] = [
    { text: 'one', toolCalls: [{ name: 'no_such_tool', arguments: {} }], usage: { input: 1000, output: 50 } },
    { text: 'two', usage: { input: 1200, output: 30 } },
    { text: 'three', usage: { input: 1500, output: 20 } },
  ]

  test('live: the model, its window and usage summed over the whole log (not the page)', async () => {
    const f = await setup(replies, { contextWindow: 8000 })
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'first')
    await promptAndWait(f, session.id, 'second')
    const tail = await f.ok('session.history', { sessionId: session.id, maxMessages: 1 })
    expect(tail.events.filter((entry) => entry.event.type === 'assistant/message')).toHaveLength(1)
    expect(tail.model).toEqual({ provider: 'scripted', model: 'script', contextWindow: 8000 })
    expect(tail.usage).toMatchObject({ total: 1050 + 1230 + 1520, context: 1520 })
    // The scripted model is free: three requests, priced at $0 (not unknown).
    expect(tail.usage?.cost).toMatchObject({ requests: 3, unpriced: 0, usd: 0 })
    // Older pages carry neither.
    const older = await f.ok('session.history', { sessionId: session.id, beforeSeq: tail.events[0]!.event.seq })
    expect(older.model).toBeUndefined()
    expect(older.usage).toBeUndefined()
  })

  test('from the file: the context of the latest reply, read backwards; no total, and no window when none is known', async () => {
    const f = await setup(replies)
    const { session } = await f.ok('session.create', {})
    await promptAndWait(f, session.id, 'first')
    await f.host.close()
    f.host = makeHost(f.k)
    expect(f.k.ctx.sessions.get(session.id)).toBeUndefined()
    const tail = await f.ok('session.history', { sessionId: session.id })
    expect(tail.model).toEqual({ provider: 'scripted', model: 'script' })
    expect(tail.usage).toEqual({ context: 1230 })
  })
})
