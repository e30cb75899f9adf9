import { afterEach, describe, expect, test } from 'vitest'
import { Session, type SessionEvent } from '@keel/session'
import { standingPlan, type TodoItem } from '@keel/todo'
import { ConversationStore, foldTodos, type HistorySource } from '../src/client/store.ts'
import { pageOfEvents } from '../src/history.ts'
import type { HistoryPage, HistoryParams, ServerFrame } from '../src/protocol.ts'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'
import { appendTurn, header, planFor } from './log-fixture.ts'

const ID = 'fixture-session'
const PLAN: TodoItem[] = [
  { content: 'Read the code', status: 'completed' },
  { content: 'Write the fix', status: 'in_progress' },
  { content: 'Run the tests', status: 'pending' },
]

/**
 * Serves pages of a log it holds, as the host does (the real pager; the plan computed over the whole log). Tests
 * can hold answers back, or bend a page to check how the store treats a page it should not trust.
 */
class LogSource implements HistorySource {
  readonly calls: HistoryParams[] = []
  gate: Promise<void> | undefined
  bend: ((page: HistoryPage, params: HistoryParams) => HistoryPage) | undefined
  constructor(readonly session: Session) {}

  async history(params: HistoryParams): Promise<HistoryPage> {
    this.calls.push(params)
    await this.gate
    const page = pageOfEvents(this.session.events, {
      beforeSeq: params.beforeSeq,
      maxMessages: params.maxMessages ?? 50,
    })
    const out: HistoryPage = { events: page.events.map((event) => ({ event })), hasMore: page.hasMore }
    if (params.beforeSeq === undefined)
      out.projections = { asOfSeq: this.session.seq - 1, values: { todos: standingPlan(this.session.events) } }
    return this.bend ? this.bend(out, params) : out
  }

  get tailCalls(): number {
    return this.calls.filter((params) => params.beforeSeq === undefined).length
  }
}

const frame = (event: SessionEvent): ServerFrame => ({ type: 'session/event', sessionId: ID, event })

/** A turn whose plan is written in its first step, followed by enough steps that the write leaves a small tail page. */
function longTurn(session: Session, turn: number, plan: TodoItem[]): void {
  const append = { surfaceOp: { op: 'append' } } as const
  session.append('turn/start', { turn, trigger: 'prompt' })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'go' }] } }, append)
  session.append(
    'assistant/message',
    {
      turn,
      step: 1,
      message: {
        role: 'assistant',
        content: [
          { type: 'tool-call', id: `w${turn}`, name: 'todo_write', arguments: JSON.stringify({ todos: plan }) },
        ],
      },
    },
    append,
  )
  session.append('tool/call', {
    turn,
    step: 1,
    callId: `w${turn}`,
    name: 'todo_write',
    arguments: JSON.stringify({ todos: plan }),
  })
  session.append('todo/write', { todos: plan })
  session.append(
    'tool/result',
    { turn, step: 1, callId: `w${turn}`, content: [{ type: 'text', text: 'ok' }], isError: false },
    append,
  )
  session.append('step/end', { turn, step: 1 })
  for (let step = 2; step <= 5; step++) {
    session.append('step/start', { turn, step })
    session.append(
      'assistant/message',
      { turn, step, message: { role: 'assistant', content: [{ type: 'text', text: `step ${step}` }] } },
      append,
    )
    session.append('step/end', { turn, step })
  }
}

function tailHasNoPlanEvents(store: ConversationStore, session: Session): void {
  const first = store.getSnapshot().firstSeq
  expect(first).toBeGreaterThan(0)
  expect(session.events.slice(first).some((event) => event.type === 'todo/write' || event.type === 'turn/start')).toBe(
    false,
  )
}

describe('ConversationStore: the plan', () => {
  test('live fold: a write sets the plan, turn/end keeps it, the next turn/start clears it', async () => {
    const session = new Session(header(ID))
    const source = new LogSource(session)
    const store = new ConversationStore(ID, source)
    await store.open()
    expect(store.getSnapshot().todos).toEqual([])
    const live = new Session(header(ID))
    const feed = (from: number) => {
      for (const event of live.events.slice(from)) store.accept(frame(event))
    }
    appendTurn(live, 1, { plan: PLAN })
    feed(0)
    expect(store.getSnapshot().todos).toEqual(PLAN)
    expect(store.getSnapshot().running).toBe(false)
    const mark = live.seq
    live.append('turn/start', { turn: 2, trigger: 'prompt' })
    feed(mark)
    expect(store.getSnapshot().todos).toEqual([])
    expect(store.getSnapshot().running).toBe(true)
    expect(source.tailCalls).toBe(1) // contiguous live events need no re-pull
  })

  test('foldTodos returns the same list for events that do not touch the plan', () => {
    const list: readonly TodoItem[] = PLAN
    const session = new Session(header())
    appendTurn(session, 1)
    for (const event of session.events.filter((e) => e.type !== 'turn/start'))
      expect(foldTodos(list, { event })).toBe(list)
  })

  test('a tail page whose window does not reach the write is seeded from its projection', async () => {
    const session = new Session(header(ID))
    appendTurn(session, 1)
    longTurn(session, 2, PLAN)
    const store = new ConversationStore(ID, new LogSource(session), { pageMessages: 2 })
    await store.open()
    tailHasNoPlanEvents(store, session)
    expect(store.getSnapshot().todos).toEqual(PLAN)
  })

  test('an absent projection means empty, even if the plan stands in the log', async () => {
    const session = new Session(header(ID))
    longTurn(session, 1, PLAN)
    for (const bent of [
      (page: HistoryPage) => ({ ...page, projections: undefined }),
      (page: HistoryPage) => ({ ...page, projections: { asOfSeq: page.projections!.asOfSeq, values: {} } }),
      (page: HistoryPage) => ({
        ...page,
        projections: { asOfSeq: page.projections!.asOfSeq, values: { todos: null } },
      }),
      (page: HistoryPage) => ({
        ...page,
        projections: { asOfSeq: page.projections!.asOfSeq, values: { todos: [{ content: 1 }] as never } },
      }),
    ]) {
      const source = new LogSource(session)
      source.bend = bent
      const store = new ConversationStore(ID, source, { pageMessages: 2 })
      await store.open()
      tailHasNoPlanEvents(store, session)
      expect(store.getSnapshot().todos).toEqual([])
    }
  })

  test('loadOlder prepends older events and never reseeds the plan', async () => {
    const session = new Session(header(ID))
    longTurn(session, 1, planFor(1))
    appendTurn(session, 1 + 1)
    longTurn(session, 3, PLAN)
    const source = new LogSource(session)
    const store = new ConversationStore(ID, source, { pageMessages: 2 })
    await store.open()
    const seeded = store.getSnapshot().todos
    expect(seeded).toEqual(PLAN)
    // An older page that (wrongly) carries a projection must not move the plan; nor do the writes and turn starts in it.
    source.bend = (page, params) =>
      params.beforeSeq !== undefined ? { ...page, projections: { asOfSeq: 0, values: { todos: planFor(9) } } } : page
    let rounds = 0
    while (store.getSnapshot().hasMore) {
      const before = store.getSnapshot()
      await store.loadOlder()
      const after = store.getSnapshot()
      expect(after.firstSeq).toBeLessThan(before.firstSeq)
      expect(after.lastSeq).toBe(before.lastSeq)
      expect(after.todos).toBe(seeded)
      if (++rounds > 50) throw new Error('loadOlder did not reach the start')
    }
    expect(store.getSnapshot().firstSeq).toBe(0)
    expect(source.tailCalls).toBe(1)
    // The whole transcript is there, in order.
    const seqs = store.getSnapshot().items.map((item) => item.seq)
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
    expect(store.getSnapshot().items.filter((item) => item.kind === 'user')).toHaveLength(3)
  })

  test('an older page that does not join the window is dropped', async () => {
    const session = new Session(header(ID))
    for (let turn = 1; turn <= 4; turn++) appendTurn(session, turn)
    const source = new LogSource(session)
    const store = new ConversationStore(ID, source, { pageMessages: 2 })
    await store.open()
    const before = store.getSnapshot()
    source.bend = (page) => ({ ...page, events: page.events.slice(0, -1) })
    await store.loadOlder()
    expect(store.getSnapshot().firstSeq).toBe(before.firstSeq)
    expect(store.getSnapshot().items).toEqual(before.items)
  })
})

describe('ConversationStore: live events', () => {
  test('a gap in live seqs re-pulls the tail page, which reseeds the plan', async () => {
    const session = new Session(header(ID))
    appendTurn(session, 1)
    const source = new LogSource(session)
    const store = new ConversationStore(ID, source, { pageMessages: 2 })
    await store.open()
    const seen = session.seq
    longTurn(session, 2, PLAN) // the tab misses these...
    session.append('step/start', { turn: 2, step: 6 })
    store.accept(frame(session.events.at(-1)!)) // ...and then sees this one
    await waitFor(() => source.tailCalls === 2 && store.getSnapshot().lastSeq === session.seq - 1, 're-pull')
    expect(store.getSnapshot().todos).toEqual(PLAN)
    expect(seen).toBeLessThan(store.getSnapshot().firstSeq) // the re-pulled window starts past what we had
    // Duplicates of what the window holds are ignored.
    store.accept(frame(session.events.at(-1)!))
    expect(source.tailCalls).toBe(2)
  })

  test('events that arrive while the tail page loads are stitched on after it, in order and without duplicates', async () => {
    const session = new Session(header(ID))
    appendTurn(session, 1)
    const source = new LogSource(session)
    let release!: () => void
    source.gate = new Promise((done) => {
      release = done
    })
    const store = new ConversationStore(ID, source)
    const opening = store.open()
    await waitFor(() => source.calls.length === 1, 'request')
    expect(store.getSnapshot().openState).toBe('loading')
    // The host answers with the log as it is when the request is served; these two arrive live meanwhile.
    appendTurn(session, 2, { plan: PLAN })
    const later = new Session(header(ID), session.events)
    later.append('turn/start', { turn: 3, trigger: 'prompt' })
    for (const event of later.events.slice(session.seq - 3)) store.accept(frame(event))
    release()
    await opening
    const snapshot = store.getSnapshot()
    expect(snapshot.openState).toBe('open')
    expect(snapshot.lastSeq).toBe(later.seq - 1)
    expect(snapshot.todos).toEqual([]) // turn 3 started after the write
    expect(snapshot.running).toBe(true)
    expect(source.tailCalls).toBe(1)
  })

  test('a hello frame that knows of later events re-pulls the tail', async () => {
    const session = new Session(header(ID))
    appendTurn(session, 1)
    const source = new LogSource(session)
    const store = new ConversationStore(ID, source)
    await store.open()
    appendTurn(session, 2, { plan: PLAN })
    store.accept({ type: 'hello', sessions: [{ sessionId: 'other', lastSeq: 999, running: false }], notify: {} })
    expect(source.tailCalls).toBe(1)
    store.accept({ type: 'hello', sessions: [{ sessionId: ID, lastSeq: session.seq - 1, running: false }], notify: {} })
    await waitFor(() => store.getSnapshot().lastSeq === session.seq - 1, 're-pull')
    expect(store.getSnapshot().todos).toEqual(PLAN)
  })

  test('streamed text shows until its message is logged; tool rows get their results and subagent runs', async () => {
    const session = new Session(header(ID))
    const store = new ConversationStore(ID, new LogSource(session))
    await store.open()
    const live = new Session(header(ID))
    appendTurn(live, 1)
    const events = live.events
    for (const event of events.slice(0, 3)) store.accept(frame(event))
    store.accept({ type: 'agent/delta', sessionId: ID, delta: { kind: 'text', text: 'Working on ' } })
    store.accept({ type: 'agent/delta', sessionId: 'someone-else', delta: { kind: 'text', text: 'nope' } })
    store.accept({ type: 'agent/delta', sessionId: ID, delta: { kind: 'text', text: 'it' } })
    expect(store.getSnapshot().partial).toEqual({ text: 'Working on it', reasoning: '' })
    for (const event of events.slice(3)) store.accept(frame(event))
    const snapshot = store.getSnapshot()
    expect(snapshot.partial).toBeNull()
    const tools = snapshot.items.filter((item) => item.kind === 'tool')
    expect(tools.map((item) => item.kind === 'tool' && item.result?.text.length)).toEqual([200, 200])
    // A subagent's start and end (events of @keel/subagent) attach its run, with its final plan, to the task row.
    const parent = new Session(header(ID))
    const append = { surfaceOp: { op: 'append' } } as const
    parent.append('turn/start', { turn: 1, trigger: 'prompt' })
    parent.append('step/start', { turn: 1, step: 1 })
    parent.append(
      'assistant/message',
      {
        turn: 1,
        step: 1,
        message: { role: 'assistant', content: [{ type: 'tool-call', id: 't1', name: 'task', arguments: '{}' }] },
      },
      append,
    )
    parent.append('tool/call', {
      turn: 1,
      step: 1,
      callId: 't1',
      name: 'task',
      arguments: '{"description":"sub","prompt":"x"}',
    })
    const raw = parent.events.map((event) => ({ ...event }) as Record<string, unknown>)
    raw.push({
      type: 'subagent/start',
      seq: raw.length,
      time: 0,
      data: { callId: 't1', sessionId: 'child-1', description: 'sub' },
    })
    raw.push({
      type: 'subagent/end',
      seq: raw.length,
      time: 0,
      data: { callId: 't1', sessionId: 'child-1', reason: 'completed', todos: PLAN },
    })
    const other = new ConversationStore(ID, {
      history: async () => ({
        events: raw.map((event) => ({ event: event as unknown as SessionEvent })),
        hasMore: false,
      }),
    })
    await other.open()
    const task = other.getSnapshot().items.find((item) => item.kind === 'tool')
    expect(task).toMatchObject({
      name: 'task',
      run: { sessionId: 'child-1', description: 'sub', status: 'completed', todos: PLAN },
    })
  })

  test('subagentPlans come from the tail projection and later projection frames, newest wins', async () => {
    const session = new Session(header(ID))
    appendTurn(session, 1)
    const source = new LogSource(session)
    source.bend = (page) => ({
      ...page,
      projections: {
        asOfSeq: session.seq - 1,
        values: {
          todos: null,
          subagentPlans: { c1: { sessionId: 's1', description: 'd', status: 'running', todos: PLAN } },
        },
      },
    })
    const store = new ConversationStore(ID, source)
    await store.open()
    expect(store.getSnapshot().subagentPlans).toEqual({
      c1: { sessionId: 's1', description: 'd', status: 'running', todos: PLAN },
    })
    store.accept({
      type: 'session/projection',
      sessionId: ID,
      key: 'subagentPlans',
      value: { c1: { sessionId: 's1', description: 'd', status: 'completed', todos: null }, bad: { todos: 'x' } },
      seq: session.seq - 1,
    })
    expect(store.getSnapshot().subagentPlans).toEqual({
      c1: { sessionId: 's1', description: 'd', status: 'completed', todos: null },
    })
    store.accept({ type: 'session/projection', sessionId: ID, key: 'subagentPlans', value: {}, seq: 0 })
    expect(Object.keys(store.getSnapshot().subagentPlans)).toEqual(['c1'])
  })
})

describe('ConversationStore against the real host', () => {
  let fixture: HostFixture | undefined
  afterEach(async () => {
    await fixture?.dispose()
    fixture = undefined
  })

  test('live frames keep the plan; a fresh store (a reloaded page) gets it back from the tail page; the next turn clears it', async () => {
    const f = (fixture = await hostFixture([
      { toolCalls: [{ name: 'todo_write', arguments: { todos: PLAN } }] },
      ...[1, 2, 3].map((i) => ({ text: `step ${i}`, toolCalls: [{ name: 'no_such_tool', arguments: {} }] })),
      { text: 'Done.' },
      { text: 'Second turn.', delayMs: 30 },
    ]))
    const source: HistorySource = {
      history: async (params) => {
        const result = await f.host.call('session.history', params)
        if (!result.ok) throw new Error(result.error.message)
        return result.value
      },
    }
    const { session } = await f.ok('session.create', {})
    const stream = await f.events()
    const store = new ConversationStore(session.id, source, { pageMessages: 2 })
    await store.open()
    let fed = 0
    const pump = () => {
      while (fed < stream.frames.length) store.accept(stream.frames[fed++]!)
    }
    await f.ok('session.prompt', { sessionId: session.id, text: 'do the work' })
    await waitFor(() => {
      pump()
      return (
        store.getSnapshot().items.some((item) => item.kind === 'assistant' && item.text === 'Done.') &&
        !store.getSnapshot().running
      )
    }, 'first turn in the store')
    expect(store.getSnapshot().todos).toEqual(PLAN)
    const todoRow = store.getSnapshot().items.find((item) => item.kind === 'tool' && item.name === 'todo_write')
    expect(todoRow).toMatchObject({ view: { title: 'Update plan' }, result: { isError: false } })

    const reloaded = new ConversationStore(session.id, source, { pageMessages: 2 })
    await reloaded.open()
    expect(reloaded.getSnapshot().items.some((item) => item.kind === 'tool' && item.name === 'todo_write')).toBe(false)
    expect(reloaded.getSnapshot().todos).toEqual(PLAN)

    await f.ok('session.prompt', { sessionId: session.id, text: 'next' })
    await waitFor(() => {
      pump()
      return store.getSnapshot().running
    }, 'second turn starts')
    expect(store.getSnapshot().todos).toEqual([])
  })
})

describe("open tasks at a turn's end", () => {
  test('a turn that ends with open tasks gets one notice naming them; a finished plan gets none', async () => {
    const session = new Session(header(ID))
    longTurn(session, 1, PLAN)
    session.append('turn/end', { turn: 1, reason: 'completed' })
    longTurn(
      session,
      2,
      PLAN.map((todo) => ({ ...todo, status: 'completed' as const })),
    )
    session.append('turn/end', { turn: 2, reason: 'completed' })
    const store = new ConversationStore(ID, new LogSource(session))
    await store.open()
    const notices = store.getSnapshot().items.filter((item) => item.kind === 'notice')
    expect(notices).toEqual([
      expect.objectContaining({
        tone: 'info',
        text: 'The turn ended with 2 open tasks: "Write the fix", "Run the tests"',
      }),
    ])
  })
})
