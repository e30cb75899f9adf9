import { afterEach, describe, expect, test } from 'vitest'
import { describeDecision } from '@keel/permissions'
import type { SessionEvent } from '@keel/session'
import { standingPlan } from '@keel/todo'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { REPO_ROOT, scanCatalog } from '../../../scripts/gen-cordis-catalog.ts'
import {
  emptyTranscript,
  FOLDED_TYPES,
  foldEvent,
  foldEvents,
  type ToolEntry,
  type TranscriptState,
} from '../src/transcript.ts'
import { hookWords } from '../src/words.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const plan = (a: string, b: string) => ({
  todos: [
    { content: 'Look', status: a },
    { content: 'Fix', status: b },
  ],
})

/** A session touching every arm of the fold: reasoning, text, plan writes, ok and failing tools, an error and a cancel. */
async function recordedSession(): Promise<{ live: TranscriptState; events: readonly SessionEvent[]; id: string }> {
  keel = await makeKeel({
    steps: [
      {
        reasoning: 'Plan first.',
        text: 'Looking.',
        toolCalls: [
          { name: 'todo_write', arguments: plan('in_progress', 'pending') },
          { name: 'bash', arguments: { command: 'echo one; echo two' } },
        ],
        usage: { input: 100, output: 10 },
      },
      {
        toolCalls: [
          { name: 'todo_write', arguments: plan('completed', 'in_progress') },
          { name: 'nope', arguments: {} },
        ],
        usage: { input: 120, output: 12 },
      },
      { text: 'Done for now.', usage: { input: 130, output: 5 } },
      { error: { kind: 'server', message: 'upstream exploded' } },
      {
        text: 'Working',
        toolCalls: [{ name: 'bash', arguments: { command: 'sleep 30' } }],
        usage: { input: 140, output: 3 },
      },
    ],
  })
  const agent = keel.agent()
  const live = emptyTranscript()
  keel.ctx.on('session/event', (session, event) => {
    if (session === agent.session) foldEvent(live, event)
  })
  await agent.prompt('first')
  await agent.prompt('second')
  const third = agent.prompt('third')
  await new Promise<void>((done) => {
    const check = setInterval(() => {
      if (
        agent.session.events.some(
          (e) => e.type === 'tool/call' && e.data.name === 'bash' && e.data.arguments.includes('sleep'),
        )
      ) {
        clearInterval(check)
        done()
      }
    }, 5)
  })
  agent.cancel()
  await third
  return { live, events: agent.session.events, id: agent.id }
}

describe('transcript fold', () => {
  test('the live fold and the cold rebuild (memory and file) give identical state', async () => {
    const { live, events, id } = await recordedSession()
    const cold = foldEvents(events)
    expect(cold).toEqual(live)
    const fromFile = foldEvents(keel!.ctx.sessions.read(id).events)
    expect(fromFile).toEqual(live)

    expect(live.entries.map((entry) => entry.kind)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'tool',
      'tool',
      'assistant',
      'plan-open',
      'user',
      'turn-end',
      'user',
      'assistant',
      'tool',
      'turn-end',
    ])
    const tools = live.entries.filter((entry) => entry.kind === 'tool')
    expect(tools.map((tool) => [tool.name, tool.status])).toEqual([
      ['todo_write', 'done'],
      ['bash', 'done'],
      ['todo_write', 'done'],
      ['nope', 'error'],
      ['bash', 'cancelled'],
    ])
    expect(tools[1]!.output).toContain('one\ntwo')
    expect(tools[4]!.output).toContain('[cancelled by the user]')
    const ends = live.entries.filter((entry) => entry.kind === 'turn-end')
    expect(ends).toMatchObject([
      { reason: 'error', message: expect.stringContaining('upstream exploded') },
      { reason: 'aborted' },
    ])
    expect(live.entries[1]).toMatchObject({ kind: 'assistant', text: 'Looking.', reasoning: 'Plan first.' })
    expect(live.tokens).toEqual({ input: 490, output: 30, context: 143 })
    expect(live.openTurn).toBeNull()
  })

  test("the plan follows @keel/todo's rule after every event: kept at turn/end, cleared at the next turn/start", async () => {
    const { events } = await recordedSession()
    const state = emptyTranscript()
    let sawKept = false
    let sawCleared = false
    for (let k = 0; k < events.length; k++) {
      foldEvent(state, events[k]!)
      expect(state.plan).toEqual(standingPlan(events.slice(0, k + 1)))
      if (events[k]!.type === 'turn/end' && state.plan) sawKept = true
      if (events[k]!.type === 'turn/start' && k > 0 && state.plan === null) sawCleared = true
    }
    expect(sawKept).toBe(true)
    expect(sawCleared).toBe(true)
  })

  test('replaying an event twice changes nothing (the live path may see events the rebuild already folded)', async () => {
    const { events } = await recordedSession()
    const once = foldEvents(events)
    const twice = foldEvents(events, foldEvents(events))
    expect(twice).toEqual(once)
  })
})

describe('open tasks at the end of a turn', () => {
  test('a turn that ends with open tasks leaves one line naming them; a finished plan leaves none', async () => {
    const { live } = await recordedSession()
    const open = live.entries.filter((entry) => entry.kind === 'plan-open')
    // Turn 1 ends with "Fix" in progress; turn 2 (error) and turn 3 (cancel) start with no plan standing.
    expect(open).toEqual([{ kind: 'plan-open', seq: expect.any(Number), open: ['Fix'] }])
  })

  test('tool calls since the last plan write are counted within the turn', () => {
    const state = emptyTranscript()
    let seq = 0
    const event = (type: string, data: object) => ({ type, seq: seq++, time: 0, data }) as SessionEvent
    foldEvent(state, event('turn/start', { turn: 1, trigger: 'prompt' }))
    foldEvent(state, event('todo/write', { todos: [{ content: 'a', status: 'in_progress' }] }))
    for (let i = 0; i < 3; i++)
      foldEvent(state, event('tool/call', { turn: 1, step: 1, callId: `c${i}`, name: 'bash', arguments: '{}' }))
    foldEvent(state, event('tool/call', { turn: 1, step: 1, callId: 'plan', name: 'todo_write', arguments: '{}' }))
    expect(state.callsSincePlan).toBe(3)
    foldEvent(state, event('todo/write', { todos: [{ content: 'a', status: 'completed' }] }))
    expect(state.callsSincePlan).toBe(0)
  })
})

describe('every log event type has a fold case', () => {
  test('each SessionEventMap member declared under packages/*/src is in the table (null: it shows nothing)', () => {
    const declared = scanCatalog(REPO_ROOT).logEvents.map((event) => event.name)
    expect(declared.length).toBeGreaterThan(10)
    expect(declared.filter((type) => !FOLDED_TYPES.includes(type))).toEqual([])
    expect(FOLDED_TYPES.filter((type) => !declared.includes(type))).toEqual([])
  })
})

describe('entries of the capabilities', () => {
  let seq = 0
  const event = (type: string, data: unknown) => ({ type, seq: seq++, time: seq, data }) as SessionEvent

  test('a task call carries its subagent run; asks and decisions land on their call', () => {
    const state = foldEvents([
      event('turn/start', { turn: 1, trigger: 'prompt' }),
      event('tool/call', { turn: 1, step: 1, callId: 't1', name: 'task', arguments: '{}' }),
      event('permission/request', { callId: 't1', tool: 'task', summary: 'delegate' }),
      event('permission/decision', { callId: 't1', decision: 'allow', scope: 'once' }),
      event('subagent/start', { callId: 't1', sessionId: 's1', description: 'Look around' }),
      event('subagent/end', { callId: 't1', sessionId: 's1', reason: 'completed', todos: null }),
      event('tool/result', { turn: 1, step: 1, callId: 't1', content: [{ type: 'text', text: 'ok' }], isError: false }),
    ])
    expect(state.entries).toEqual([
      expect.objectContaining({
        kind: 'tool',
        status: 'done',
        asked: 'delegate',
        decision: { callId: 't1', decision: 'allow', scope: 'once' },
        run: expect.objectContaining({ sessionId: 's1', description: 'Look around', status: 'completed' }),
      }),
    ])
  })

  test("a tool call's hook runs land under it, in order; others are entries of their own; one wording", () => {
    const state = foldEvents([
      event('turn/start', { turn: 1, trigger: 'prompt' }),
      event('hook/run', {
        event: 'UserPromptSubmit',
        command: 'ctx.sh',
        exit: 0,
        ms: 3,
        verdict: 'context',
        reason: 'x',
      }),
      event('tool/call', { turn: 1, step: 1, callId: 'b1', name: 'bash', arguments: '{"command":"rm -rf x"}' }),
      event('hook/run', {
        event: 'PreToolUse',
        command: 'guard.sh',
        callId: 'b1',
        exit: 2,
        ms: 5,
        verdict: 'block',
        reason: 'no rm',
      }),
      event('hook/run', {
        event: 'PreToolUse',
        command: 'slow.sh',
        callId: 'b1',
        exit: null,
        ms: 9,
        verdict: 'error',
        timedOut: true,
      }),
      event('permission/decision', { callId: 'b1', decision: 'deny', scope: 'hook', message: 'no rm' }),
      event('hook/run', { event: 'PreToolUse', command: 7, callId: 'b1', verdict: 'ok' }),
    ])
    expect(state.entries.map((entry) => entry.kind)).toEqual(['hook', 'tool'])
    const tool = state.entries[1] as ToolEntry
    expect(tool.hooks).toEqual([
      { event: 'PreToolUse', command: 'guard.sh', exit: 2, verdict: 'block', reason: 'no rm' },
      { event: 'PreToolUse', command: 'slow.sh', exit: null, verdict: 'error', timedOut: true },
    ])
    expect(tool.decision).toMatchObject({ decision: 'deny', scope: 'hook' })
    expect(tool.hooks!.map((run) => hookWords(run)?.text)).toEqual([
      'PreToolUse hook blocked: no rm',
      'PreToolUse hook slow.sh timed out',
    ])
    expect(hookWords({ event: 'Stop', command: 'x', exit: 0, verdict: 'ok' })).toBeUndefined()
  })

  test('compaction, a rewind and harness-made context are entries of their own', () => {
    const state = foldEvents([
      event('compaction/end', { turn: 1, before: 9000, after: 1200, summarised: 12 }),
      event('user/message', {
        message: { role: 'user', source: 'compaction', content: [{ type: 'text', text: 'S' }] },
      }),
      event('checkpoint/restore', { toTurn: 2, tree: 'a', before: 'b', files: ['x.ts'], fork: 'f1' }),
    ])
    expect(state.entries).toEqual([
      { kind: 'compaction', seq: expect.any(Number), before: 9000, after: 1200, summarised: 12 },
      { kind: 'context', seq: expect.any(Number), source: 'compaction', text: 'S' },
      { kind: 'rewind', seq: expect.any(Number), toTurn: 2, files: ['x.ts'], fork: 'f1' },
    ])
  })

  test("a prompt's images are on its entry by name, type and size; running jobs are listed until they end", () => {
    const state = foldEvents([
      event('user/message', {
        message: {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=', name: 'shot.png' },
            { type: 'image', mediaType: 'image/jpeg', data: '/9j/' },
          ],
        },
      }),
      event('job/start', { id: 'job-1', command: 'node server.js', sandbox: 'off' }),
      event('job/start', { id: 'job-2', command: 'npm run watch', sandbox: 'off' }),
      event('job/start', { id: 'job-3', command: 'sleep 9', sandbox: 'off' }),
    ])
    expect(state.entries).toEqual([
      {
        kind: 'user',
        seq: expect.any(Number),
        text: 'look',
        images: [
          { name: 'shot.png', mediaType: 'image/png', bytes: 8 },
          { mediaType: 'image/jpeg', bytes: 3 },
        ],
      },
    ])
    expect(state.jobs.map((job) => job.id)).toEqual(['job-1', 'job-2', 'job-3'])
    const before = state.jobs
    foldEvent(state, event('job/exit', { id: 'job-1', code: 0, signal: null, seconds: 1 }))
    foldEvent(state, event('job/kill', { id: 'job-3', why: 'job_kill' }))
    foldEvent(state, event('job/exit', { id: 'job-3', code: null, signal: 'SIGTERM', seconds: 1 }))
    expect(state.jobs).toEqual([{ id: 'job-2', command: 'npm run watch', startedAt: expect.any(Number) }])
    expect(before).toHaveLength(3) // replaced, not edited
  })

  test('data of the wrong shape shows nothing for that event and the fold goes on', () => {
    const state = foldEvents([
      event('user/message', { message: null }),
      event('tool/call', { callId: 'c', name: 'bash', arguments: 7 }),
      event('tool/result', { callId: 'c', content: 'nope', isError: true, details: { kind: 'diff' } }),
      event('permission/decision', { callId: 'c', decision: 'maybe', scope: 'once' }),
      event('checkpoint/restore', null),
      event('turn/end', { turn: 'x', reason: 'exploded' }),
      event('x/unknown', {}),
      event('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'still here' }] } }),
    ])
    expect(state.entries.map((entry) => entry.kind)).toEqual(['user', 'tool', 'turn-end', 'user'])
    expect(state.entries[1]).toMatchObject({ status: 'error', arguments: '7', output: '' })
    expect(state.entries[1]).not.toHaveProperty('decision')
    expect(state.entries[2]).toMatchObject({ reason: 'error', turn: 0 })
    expect(state.entries[3]).toMatchObject({ text: 'still here' })
  })

  test('an entry that changes is a new object (views cache by identity)', () => {
    const state = foldEvents([event('tool/call', { turn: 1, step: 1, callId: 'c', name: 'bash', arguments: '{}' })])
    const running = state.entries[0]
    foldEvent(state, event('tool/result', { callId: 'c', content: [], isError: false }))
    expect(state.entries[0]).not.toBe(running)
    expect(running).toMatchObject({ status: 'running' })
  })

  test('a decision keeps its session scope, saved rules and the sentence the person gave; a failed command is an error', () => {
    const state = foldEvents([
      event('tool/call', { turn: 1, step: 1, callId: 'a', name: 'bash', arguments: '{}' }),
      event('permission/decision', { callId: 'a', decision: 'deny', scope: 'once', message: 'keep dist' }),
      event('tool/call', { turn: 1, step: 1, callId: 'b', name: 'bash', arguments: '{}' }),
      event('permission/decision', {
        callId: 'b',
        decision: 'allow',
        scope: 'session',
        rules: ['bash(npm test:*)', 7],
      }),
      event('tool/result', {
        callId: 'b',
        content: [{ type: 'text', text: 'boom' }],
        isError: false,
        details: { kind: 'command', exit: { kind: 'exited', code: 3 } },
      }),
      event('user/message', {
        message: { role: 'user', source: 'steer', content: [{ type: 'text', text: 'not that' }] },
      }),
    ])
    expect(state.entries[0]).toMatchObject({ decision: { scope: 'once', message: 'keep dist' } })
    expect(state.entries[1]).toMatchObject({
      decision: { scope: 'session', rules: ['bash(npm test:*)'] },
      status: 'error',
      failure: 'exit 3',
    })
    expect(state.entries[2]).toMatchObject({ kind: 'user', text: 'not that', steer: true })
  })

  test('a decision answered on another machine keeps that machine; one of the wrong type is dropped', () => {
    const state = foldEvents([
      event('tool/call', { turn: 1, step: 1, callId: 'a', name: 'bash', arguments: '{}' }),
      event('permission/decision', { callId: 'a', decision: 'allow', scope: 'once', answeredOn: 'beta' }),
      event('tool/call', { turn: 1, step: 1, callId: 'b', name: 'bash', arguments: '{}' }),
      event('permission/decision', { callId: 'b', decision: 'allow', scope: 'once', answeredOn: 7 }),
    ])
    expect(state.entries[0]).toMatchObject({ decision: { answeredOn: 'beta' } })
    expect(describeDecision((state.entries[0] as ToolEntry).decision!)).toBe('✓ allowed once by the user on beta')
    expect((state.entries[1] as ToolEntry).decision).toEqual({ callId: 'b', decision: 'allow', scope: 'once' })
    expect(describeDecision((state.entries[1] as ToolEntry).decision!)).toBe('✓ allowed once by the user')
  })
})
