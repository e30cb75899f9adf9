import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, test } from 'vitest'
import * as compaction from '@keel/compaction'
import { SUMMARY_HEADER, SUMMARY_SYSTEM, type CompactionOutcome } from '@keel/compaction'
import type { ScriptStep } from '@keel/llm'
import { textOf, type Message, type SessionEvent } from '@keel/session'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

const keels: Keel[] = []
afterEach(async () => {
  for (const keel of keels.splice(0).reverse()) await keel.dispose()
})

const WINDOW = 6000 // threshold 0.8 → compaction once the next request is estimated above 4800 tokens

async function start(steps: ScriptStep[], config: Partial<compaction.Config> = {}): Promise<Keel> {
  const keel = await makeKeel({ steps, contextWindow: WINDOW, plugins: [[compaction, config]] })
  keels.push(keel)
  return keel
}

type Todo = { content: string; status: 'pending' | 'in_progress' | 'completed' }
const usage = (input: number) => ({ input, output: 10 })
const write = (todos: Todo[], input: number): ScriptStep => ({
  toolCalls: [{ name: 'todo_write', arguments: { todos } }],
  usage: usage(input),
})
const bash = (command: string, input: number): ScriptStep => ({
  toolCalls: [{ name: 'bash', arguments: { command } }],
  usage: usage(input),
})
const say = (text: string, input: number): ScriptStep => ({ text, usage: usage(input) })

const PLAN_OPEN: Todo[] = [
  { content: 'Read the parser', status: 'completed' },
  { content: 'Fix the tokenizer', status: 'in_progress' },
  { content: 'Add tests', status: 'pending' },
]
const SUMMARY = 'The user asked for a plan; the plan was written and the parser was read.'

/**
 * Three turns. Turn 3 is a tool loop whose second request reports 5,000 input tokens, so the third request is
 * preceded by a compaction whose summary reply comes next in the script.
 */
function threeTurns(turn3Plan: Todo[] | null, summary: ScriptStep): ScriptStep[] {
  return [
    write(
      [
        { content: 'Read the parser', status: 'in_progress' },
        { content: 'Fix the tokenizer', status: 'pending' },
        { content: 'Add tests', status: 'pending' },
      ],
      300,
    ),
    say('Planned.', 400),
    bash('echo alpha-source', 600),
    say('Read it.', 700),
    turn3Plan
      ? {
          ...write(turn3Plan, 800),
          toolCalls: [...write(turn3Plan, 800).toolCalls!, { name: 'bash', arguments: { command: 'echo fix-0' } }],
        }
      : bash('echo fix-0', 800),
    bash('echo fix-1', 5000),
    summary,
    bash('echo fix-2', 900),
    say('Fixed.', 1000),
  ]
}

async function runThreeTurns(keel: Keel) {
  const agent = keel.agent()
  expect((await agent.prompt('plan the work')).reason).toBe('completed')
  expect((await agent.prompt('inspect module alpha')).reason).toBe('completed')
  const third = await agent.prompt('now fix it')
  return { agent, third }
}

/** Every tool result answers a call made earlier in the same request, and every call is answered. */
function expectPairsWhole(messages: readonly Message[]): void {
  const open = new Set<string>()
  for (const message of messages) {
    for (const block of message.content) {
      if (block.type === 'tool-call') open.add(block.id)
      if (block.type === 'tool-result') {
        expect(open.has(block.toolCallId), `result ${block.toolCallId} without its call`).toBe(true)
        open.delete(block.toolCallId)
      }
    }
  }
  expect([...open], 'calls without results').toEqual([])
}

const isReplace = (event: SessionEvent) => 'surfaceOp' in event && event.surfaceOp.op === 'replace'

describe('automatic compaction in the agent loop', () => {
  test('a long tool loop is compacted: summary and plan block first, the last two turns verbatim, the log keeps everything, resume derives the same', async () => {
    const keel = await start(threeTurns(PLAN_OPEN, { text: SUMMARY }))
    const { agent, third } = await runThreeTurns(keel)
    expect(third.reason).toBe('completed')
    const requests = keel.model.requests
    expect(requests).toHaveLength(9)

    // The summary request: our own prompt, no tools, turn 1 only.
    const summaryRequest = requests[6]!
    expect(summaryRequest.tools).toEqual([])
    expect(summaryRequest.system).toBe(SUMMARY_SYSTEM)
    expect(summaryRequest.messages).toHaveLength(1)
    const transcript = textOf(summaryRequest.messages[0]!.content)
    expect(transcript).toContain('plan the work')
    expect(transcript).toContain('Planned.')
    expect(transcript).not.toContain('inspect module alpha')
    expect(transcript).not.toContain('now fix it')

    // The next request: the summary (with the plan block) in place of turn 1, then turns 2 and 3 untouched.
    const before = requests[5]!.messages
    const after = requests[7]!.messages
    const summary = after[0]!
    expect(summary).toMatchObject({ role: 'user', source: 'compaction' })
    const text = textOf(summary.content)
    expect(text.startsWith(SUMMARY_HEADER)).toBe(true)
    expect(text).toContain(SUMMARY)
    expect(text).toContain('<plan-state>\n')
    expect(text).toContain(
      '- [completed] Read the parser\n- [in_progress] Fix the tokenizer\n- [pending] Add tests\n</plan-state>',
    )
    expect(text).not.toMatch(/redo|start over|again/i)
    expect(textOf(before[4]!.content)).toBe('inspect module alpha')
    expect(after.slice(1, 1 + before.length - 4)).toEqual(before.slice(4))
    expect(after).toHaveLength(1 + before.length - 4 + 2)
    for (const request of requests.slice(7)) expectPairsWhole(request.messages)

    // The log: every original event is still there; the compaction sits inside turn 3, step 3.
    const events = agent.session.events
    const appended = events.filter((event) => 'surfaceOp' in event && event.surfaceOp.op === 'append')
    expect(appended.filter((event) => event.type === 'user/message')).toHaveLength(3)
    expect(appended.filter((event) => event.type === 'assistant/message')).toHaveLength(8)
    expect(appended.filter((event) => event.type === 'tool/result')).toHaveLength(6)
    const at = events.findIndex((event) => event.type === 'compaction/start')
    expect(events.slice(at - 1, at + 4).map((event) => event.type)).toEqual([
      'step/start',
      'compaction/start',
      'user/message',
      'compaction/end',
      'assistant/message',
    ])
    expect(events[at - 1]!.data).toEqual({ turn: 3, step: 3 })
    const begin = events[at] as SessionEvent<'compaction/start'>
    const end = events[at + 2] as SessionEvent<'compaction/end'>
    expect(begin.data).toMatchObject({ turn: 3, reason: 'auto' })
    expect(begin.data.before).toBeGreaterThan(0.8 * WINDOW)
    expect(end.data).toMatchObject({ turn: 3, summarised: 4, before: begin.data.before })
    expect(end.data.after).toBeLessThan(end.data.before)
    expect(end.data.error).toBeUndefined()
    const replace = events[at + 1]!
    const firstTurnPrompt = events.find((event) => event.type === 'user/message')!
    const secondTurnPrompt = events.filter((event) => event.type === 'user/message')[1]!
    expect(replace).toMatchObject({ surfaceOp: { op: 'replace', start: firstTurnPrompt.seq } })
    expect((replace as { surfaceOp: { end: number } }).surfaceOp.end).toBeLessThan(secondTurnPrompt.seq)
    const lastWrite = events.findLast((event) => event.type === 'todo/write')!
    expect((replace as { sourceEventSeqs?: number[] }).sourceEventSeqs).toEqual([lastWrite.seq])

    // On disk too: one line per event, the summarised ones included.
    const path = keel.ctx.sessions.pathOf(agent.id)!
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(1 + events.length)

    // Resume in a fresh Keel on the same KEEL_HOME: the same messages, and the next request starts with the summary.
    const derived = agent.session.deriveMessages()
    expect(derived[0]).toEqual(summary)
    const id = agent.id
    keel.ctx.agents.close(agent)
    const fresh = await start([say('Resumed.', 100)])
    process.env.KEEL_HOME = keel.home
    const { agent: resumed, repairs } = fresh.ctx.agents.resume(id, { model: fresh.model })
    expect(repairs).toEqual([])
    expect(resumed.session.deriveMessages()).toEqual(derived)
    expect((await resumed.prompt('anything left?')).reason).toBe('completed')
    expect(fresh.model.requests[0]!.messages.slice(0, derived.length)).toEqual(derived)
    fresh.ctx.agents.close(resumed)
  })

  test('a failed summary request changes nothing: no replace, the error on compaction/end, the turn goes on, no retry in that turn', async () => {
    const steps = threeTurns(PLAN_OPEN, { error: { kind: 'server', message: 'summary backend exploded' } })
    // Still over the threshold at the last request: a settled failure is not retried in the same turn.
    steps[7] = bash('echo fix-2', 4900)
    const keel = await start(steps)
    const done: CompactionOutcome[] = []
    keel.ctx.on('compaction/done', (_agent, outcome) => {
      done.push(outcome)
    })
    const { agent, third } = await runThreeTurns(keel)
    expect(third.reason).toBe('completed')
    const requests = keel.model.requests
    expect(requests).toHaveLength(9)
    expect(agent.session.events.some(isReplace)).toBe(false)
    const end = agent.session.events.find((event) => event.type === 'compaction/end') as SessionEvent<'compaction/end'>
    expect(end.data).toMatchObject({ turn: 3, summarised: 0, error: 'summary backend exploded' })
    expect(end.data.after).toBe(end.data.before)
    // The request after the failure carries the full, unchanged history.
    expect(requests[7]!.messages.slice(0, requests[5]!.messages.length)).toEqual(requests[5]!.messages)
    expect(requests[8]!.messages.slice(0, requests[7]!.messages.length)).toEqual(requests[7]!.messages)
    expect(done).toEqual([expect.objectContaining({ ok: false, reason: 'auto', error: 'summary backend exploded' })])
    expect(agent.session.events.filter((event) => event.type === 'compaction/start')).toHaveLength(1)
  })

  test('a failed summary when the next request cannot fit ends the turn with a one-line error', async () => {
    const steps = threeTurns(PLAN_OPEN, { error: { kind: 'server', message: 'summary backend exploded' } })
    steps[5] = bash('echo fix-1', WINDOW + 500)
    const keel = await start(steps)
    const { agent, third } = await runThreeTurns(keel)
    expect(third.reason).toBe('error')
    expect(third.message).toMatch(
      /^context is full \(~\d+ of 6000 tokens\) and compaction failed: summary backend exploded$/,
    )
    expect(keel.model.requests).toHaveLength(7)
    expect(agent.session.events.some(isReplace)).toBe(false)
    expect(agent.session.last).toMatchObject({ type: 'turn/end', data: { turn: 3, reason: 'error' } })
  })

  test.each([
    [
      'a finished plan',
      [
        { content: 'Read the parser', status: 'completed' },
        { content: 'Fix the tokenizer', status: 'completed' },
      ] as Todo[],
    ],
    ['no plan at all', null],
  ])('%s is not re-injected', async (_label, plan) => {
    const steps = threeTurns(plan, { text: SUMMARY })
    if (!plan) steps[0] = bash('echo plan-less', 300)
    const keel = await start(steps)
    const { agent, third } = await runThreeTurns(keel)
    expect(third.reason).toBe('completed')
    const summary = keel.model.requests[7]!.messages[0]!
    expect(summary).toMatchObject({ source: 'compaction' })
    expect(textOf(summary.content)).not.toContain('plan-state')
    expect(textOf(summary.content)).not.toContain('[completed]')
    expect(textOf(keel.model.requests[6]!.messages[0]!.content)).not.toContain('carried separately')
    const replace = agent.session.events.find(isReplace)!
    expect('sourceEventSeqs' in replace).toBe(false)
  })

  test('keepTurns 1 at the first request of a turn: only that turn stays, and the plan standing before it is carried', async () => {
    const keel = await start(
      [
        say('Sure.', 100),
        write(PLAN_OPEN, 300),
        bash('echo half-done', 600),
        say('Half done.', 5000),
        { text: SUMMARY },
        say('Continuing.', 200),
      ],
      { keepTurns: 1 },
    )
    const agent = keel.agent()
    await agent.prompt('plan the work')
    await agent.prompt('inspect module alpha')
    expect((await agent.prompt('keep going')).reason).toBe('completed')
    const requests = keel.model.requests
    expect(requests).toHaveLength(6)
    const transcript = textOf(requests[4]!.messages[0]!.content)
    expect(transcript).toContain('inspect module alpha')
    expect(transcript).not.toContain('keep going')
    const messages = requests[5]!.messages
    expect(messages).toHaveLength(2)
    expect(textOf(messages[0]!.content)).toContain('- [in_progress] Fix the tokenizer')
    expect(messages[1]).toEqual({ role: 'user', source: 'user', content: [{ type: 'text', text: 'keep going' }] })
    const start3 = agent.session.events.findIndex((event) => event.type === 'compaction/start')
    expect(agent.session.events.slice(start3 - 3, start3).map((event) => event.type)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
    ])
  })

  test('a second compaction folds the first summary in, and the result survives resume', async () => {
    const keel = await start([
      say('one', 100),
      say('two', 200),
      say('three', 5000),
      { text: 'FIRST SUMMARY' },
      say('four', 300),
      say('five', 5000),
      { text: 'SECOND SUMMARY' },
      say('six', 300),
    ])
    const agent = keel.agent()
    for (const prompt of ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'])
      expect((await agent.prompt(prompt)).reason).toBe('completed')
    const requests = keel.model.requests
    expect(requests).toHaveLength(8)
    // First compaction at p4's request: p1, p2 summarised; p3 and p4 kept.
    expect(requests[4]!.messages.map((m) => textOf(m.content))).toEqual([
      expect.stringContaining('FIRST SUMMARY'),
      'p3',
      'three',
      'p4',
    ])
    // Second at p6's request: the first summary, p3 and p4 are folded into the new one.
    expect(textOf(requests[6]!.messages[0]!.content)).toContain('FIRST SUMMARY')
    expect(requests[7]!.messages.map((m) => textOf(m.content))).toEqual([
      expect.stringContaining('SECOND SUMMARY'),
      'p5',
      'five',
      'p6',
    ])
    const derived = agent.session.deriveMessages()
    const id = agent.id
    keel.ctx.agents.close(agent)
    const fresh = await start([])
    process.env.KEEL_HOME = keel.home
    const { agent: resumed } = fresh.ctx.agents.resume(id, { model: fresh.model })
    expect(resumed.session.deriveMessages()).toEqual(derived)
    fresh.ctx.agents.close(resumed)
  })
})

describe('cancellation and listeners', () => {
  test('cancelling the turn during the summary request ends it aborted and leaves the surface alone', async () => {
    const keel = await start([say('one', 100), say('two', 100), say('three', 5000), { hang: true }])
    const agent = keel.agent()
    for (const prompt of ['p1', 'p2', 'p3']) await agent.prompt(prompt)
    keel.ctx.on('compaction/running', (a) => {
      if (a === agent) setTimeout(() => agent.cancel(), 10)
    })
    const result = await agent.prompt('p4')
    expect(result.reason).toBe('aborted')
    expect(agent.session.events.some(isReplace)).toBe(false)
    expect(agent.session.events.find((event) => event.type === 'compaction/end')!.data).toMatchObject({
      error: 'cancelled',
      summarised: 0,
    })
    expect(agent.session.last).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })

  test('a UI listener that throws does not break the compaction', async () => {
    const keel = await start([
      say('one', 100),
      say('two', 100),
      say('three', 5000),
      { text: SUMMARY },
      say('four', 100),
    ])
    keel.ctx.on('compaction/running', () => {
      throw new Error('broken widget')
    })
    keel.ctx.on('compaction/done', () => {
      throw new Error('broken widget')
    })
    const agent = keel.agent()
    for (const prompt of ['p1', 'p2', 'p3']) await agent.prompt(prompt)
    expect((await agent.prompt('p4')).reason).toBe('completed')
    expect(agent.session.events.filter(isReplace)).toHaveLength(1)
  })
})

describe('manual compaction', () => {
  test('idle: the summary is made at once and committed inside the next turn, before its first request', async () => {
    // Realistic usage: a provider's input count includes the system prompt and tool schemas.
    const keel = await start([
      say('one', 1500),
      say('two', 1600),
      say('three', 1700),
      { text: SUMMARY },
      say('four', 1000),
    ])
    const live: string[] = []
    keel.ctx.on('compaction/running', (_agent, info) => {
      live.push(`running ${info.reason}`)
    })
    keel.ctx.on('compaction/done', (_agent, outcome) => {
      live.push(`done ${outcome.ok}`)
    })
    const agent = keel.agent()
    for (const prompt of ['p1', 'p2', 'p3']) await agent.prompt(prompt)
    const seq = agent.session.seq
    const outcome = await keel.ctx.compaction.compact(agent)
    expect(outcome).toMatchObject({ ok: true, reason: 'manual', applied: 'next-request', summarised: 2 })
    expect(outcome.after).toBeLessThan(outcome.before)
    expect(live).toEqual(['running manual', 'done true'])
    // Nothing on the log while idle: compaction events need an open turn.
    expect(agent.session.seq).toBe(seq)
    // Asking again while the summary waits costs no second request.
    expect(await keel.ctx.compaction.compact(agent)).toBe(outcome)
    expect(keel.model.requests).toHaveLength(4)

    await agent.prompt('p4')
    const request = keel.model.requests[4]!
    expect(request.messages.map((m) => textOf(m.content))).toEqual([
      expect.stringContaining(SUMMARY),
      'p2',
      'two',
      'p3',
      'three',
      'p4',
    ])
    const events = agent.session.events.slice(seq)
    expect(events.map((event) => event.type)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'compaction/start',
      'user/message',
      'compaction/end',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    expect(events[3]!.data).toMatchObject({ turn: 4, reason: 'manual' })
  })

  test('with nothing old enough to summarise it says so and changes nothing', async () => {
    const keel = await start([say('one', 100)])
    const agent = keel.agent()
    await agent.prompt('p1')
    const seq = agent.session.seq
    const outcome = await keel.ctx.compaction.compact(agent)
    expect(outcome).toMatchObject({
      ok: false,
      summarised: 0,
      error: 'nothing older than the last 2 turns to summarise',
    })
    expect(agent.session.seq).toBe(seq)
    expect(keel.model.requests).toHaveLength(1)
  })

  test('mid-turn: it runs at the next request boundary even below the threshold, and resolves then', async () => {
    const keel = await start([
      say('one', 100),
      say('two', 100),
      bash('echo working', 100),
      { text: SUMMARY },
      say('done', 100),
    ])
    const agent = keel.agent()
    await agent.prompt('p1')
    await agent.prompt('p2')
    let outcome: Promise<CompactionOutcome> | undefined
    keel.ctx.on('agent/delta', (a, delta) => {
      if (a === agent && delta.kind === 'tool-input' && !outcome) outcome = keel.ctx.compaction.compact(agent)
    })
    await agent.prompt('p3')
    expect(await outcome).toMatchObject({ ok: true, reason: 'manual', applied: 'now', summarised: 2 })
    expect(keel.model.requests[4]!.messages.map((m) => m.role)).toEqual([
      'user',
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
    ])
    const start3 = agent.session.events.find((event) => event.type === 'compaction/start')!
    expect(start3.data).toMatchObject({ turn: 3, reason: 'manual' })
  })

  test('a failed idle summary leaves nothing pending', async () => {
    const keel = await start([
      say('one', 100),
      say('two', 100),
      say('three', 100),
      { error: { kind: 'bad-request', message: 'no summaries today' } },
      say('four', 100),
    ])
    const agent = keel.agent()
    for (const prompt of ['p1', 'p2', 'p3']) await agent.prompt(prompt)
    expect(await keel.ctx.compaction.compact(agent)).toMatchObject({ ok: false, error: 'no summaries today' })
    await agent.prompt('p4')
    expect(agent.session.events.some((event) => event.type.startsWith('compaction/') || isReplace(event))).toBe(false)
    expect(keel.model.requests[4]!.messages).toHaveLength(7)
  })

  test('a closed agent is refused', async () => {
    const keel = await start([])
    const agent = keel.agent()
    keel.ctx.agents.close(agent)
    await expect(keel.ctx.compaction.compact(agent)).rejects.toThrow(/is closed/)
  })
})
