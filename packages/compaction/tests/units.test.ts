import { describe, expect, test } from 'vitest'
import { chooseCut, estimateContext, planBlock, planToCarry, renderTranscript, summaryRequest } from '@keel/compaction'
import { Session, textOf, type SessionHeader } from '@keel/session'
import type { TodoItem } from '@keel/todo'

const header: SessionHeader = { type: 'session', version: 1, id: 'units', createdAt: 0, cwd: '/tmp/project' }

interface StepSpec {
  text?: string
  calls?: { id: string; name?: string; output: string }[]
  usage?: number
  contextNote?: string
}

/** Appends one whole turn the way the agent loop does; `open` leaves it running after its steps. */
function turn(session: Session, n: number, prompt: string, steps: StepSpec[], open = false): void {
  session.append('turn/start', { turn: n, trigger: 'prompt' })
  steps.forEach((spec, i) => {
    const step = i + 1
    session.append('step/start', { turn: n, step })
    if (step === 1)
      session.append(
        'user/message',
        { message: { role: 'user', content: [{ type: 'text', text: prompt }], source: 'user' } },
        { surfaceOp: { op: 'append' } },
      )
    const calls = spec.calls ?? []
    session.append(
      'assistant/message',
      {
        turn: n,
        step,
        message: {
          role: 'assistant',
          content: [
            ...(spec.text ? [{ type: 'text' as const, text: spec.text }] : []),
            ...calls.map((call) => ({
              type: 'tool-call' as const,
              id: call.id,
              name: call.name ?? 'bash',
              arguments: '{}',
            })),
          ],
        },
        ...(spec.usage ? { usage: { input: spec.usage, output: 1 } } : {}),
      },
      { surfaceOp: { op: 'append' } },
    )
    for (const call of calls) {
      session.append('tool/call', { turn: n, step, callId: call.id, name: call.name ?? 'bash', arguments: '{}' })
      // A harness note landing between a call and its result must not become a cut point.
      if (spec.contextNote)
        session.append(
          'user/message',
          { message: { role: 'user', content: [{ type: 'text', text: spec.contextNote }], source: 'context' } },
          { surfaceOp: { op: 'append' } },
        )
      session.append(
        'tool/result',
        { turn: n, step, callId: call.id, content: [{ type: 'text', text: call.output }], isError: false },
        { surfaceOp: { op: 'append' } },
      )
    }
    if (!open || i < steps.length - 1) session.append('step/end', { turn: n, step })
  })
  if (!open) session.append('turn/end', { turn: n, reason: 'completed' })
}

function openTurn(session: Session, n: number, prompt: string): void {
  session.append('turn/start', { turn: n, trigger: 'prompt' })
  session.append('step/start', { turn: n, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: prompt }], source: 'user' } },
    { surfaceOp: { op: 'append' } },
  )
}

function finishTurn(session: Session, n: number, text: string): void {
  session.append(
    'assistant/message',
    { turn: n, step: 1, message: { role: 'assistant', content: [{ type: 'text', text }] } },
    { surfaceOp: { op: 'append' } },
  )
  session.append('step/end', { turn: n, step: 1 })
  session.append('turn/end', { turn: n, reason: 'completed' })
}

function summarise(session: Session, text: string, cut: { start: number; end: number }): void {
  session.append(
    'user/message',
    { message: { role: 'user', source: 'compaction', content: [{ type: 'text', text }] } },
    { surfaceOp: { op: 'replace', ...cut } },
  )
}

const texts = (session: Session) =>
  session
    .deriveMessages()
    .map((message) => textOf(message.content) || message.content.map((block) => block.type).join('+'))

describe('chooseCut', () => {
  test('cuts only where a turn begins and keeps the last keepTurns turns, the open one included', () => {
    const session = new Session(header)
    turn(session, 1, 'p1', [{ calls: [{ id: 'a', output: 'A' }], contextNote: 'note' }, { text: 'one' }])
    turn(session, 2, 'p2', [
      {
        calls: [
          { id: 'b', output: 'B' },
          { id: 'c', output: 'C' },
        ],
      },
      { text: 'two' },
    ])
    turn(session, 3, 'p3', [{ calls: [{ id: 'd', output: 'D' }] }], true)
    const cut = chooseCut(session, 2)!
    expect(cut.messages.map((m) => textOf(m.content) || m.role)).toEqual(['p1', 'assistant', 'note', 'tool', 'one'])
    expect(cut.from).toBe(0)
    expect(session.at(session.surfaceNodes[cut.to]!)).toMatchObject({
      type: 'user/message',
      data: { message: { content: [{ text: 'p2' }] } },
    })
    expect(
      chooseCut(session, 1)!
        .messages.map((m) => textOf(m.content) || m.role)
        .at(-1),
    ).toBe('two')
    expect(chooseCut(session, 3)).toBeUndefined()
  })

  test('a run never ends between a tool call and its result, whatever sits between them', () => {
    const session = new Session(header)
    turn(session, 1, 'p1', [
      {
        calls: [
          { id: 'a', output: 'A' },
          { id: 'b', output: 'B' },
        ],
        contextNote: 'mid-step note',
      },
      { text: 'one' },
    ])
    turn(session, 2, 'p2', [{ text: 'two' }])
    turn(session, 3, 'p3', [{ text: 'three' }], true)
    for (const keep of [1, 2]) {
      const cut = chooseCut(session, keep)!
      const calls = cut.messages.flatMap((m) =>
        m.content.filter((b) => b.type === 'tool-call').map((b) => (b as { id: string }).id),
      )
      const results = cut.messages.flatMap((m) =>
        m.content.filter((b) => b.type === 'tool-result').map((b) => (b as { toolCallId: string }).toolCallId),
      )
      expect(results.sort()).toEqual(calls.sort())
    }
  })

  test('the next compaction folds the earlier summary in on the very next turn (its span, not its own seq, is covered)', () => {
    const session = new Session(header)
    turn(session, 1, 'p1', [{ text: 'one' }])
    turn(session, 2, 'p2', [{ text: 'two' }])
    // Turn 3 is compacted at its first request, after its prompt (where agent/prepare runs).
    openTurn(session, 3, 'p3')
    summarise(session, 'S1', chooseCut(session, 2)!)
    finishTurn(session, 3, 'three')
    expect(texts(session)).toEqual(['S1', 'p2', 'two', 'p3', 'three'])
    // Turn 4 keeps turns 3 and 4: the run ends inside turn 3, where S1's own seq lies, and is still a valid cut.
    openTurn(session, 4, 'p4')
    const second = chooseCut(session, 2)!
    expect(second.messages.map((m) => textOf(m.content))).toEqual(['S1', 'p2', 'two'])
    expect(second.end).toBeLessThan(session.surfaceNodes[0]!) // the range stops short of S1's own seq
    summarise(session, 'S2', second)
    finishTurn(session, 4, 'four')
    expect(texts(session)).toEqual(['S2', 'p3', 'three', 'p4', 'four'])
    // And again on turn 5.
    openTurn(session, 5, 'p5')
    const third = chooseCut(session, 2)!
    expect(third.from).toBe(0)
    expect(third.messages.map((m) => textOf(m.content))).toEqual(['S2', 'p3', 'three'])
    summarise(session, 'S3', third)
    expect(texts(session)).toEqual(['S3', 'p4', 'four', 'p5'])
    // A seeded copy (what resume does) derives the same.
    expect(texts(new Session(header, session.events))).toEqual(texts(session))
  })

  test('a summary alone before the kept turns is not re-summarised', () => {
    const session = new Session(header)
    turn(session, 1, 'p1', [{ text: 'one' }])
    turn(session, 2, 'p2', [{ text: 'two' }])
    turn(session, 3, 'p3', [{ text: 'three' }], true)
    summarise(session, 'S', chooseCut(session, 2)!)
    expect(chooseCut(session, 2)).toBeUndefined()
  })
})

describe('estimateContext', () => {
  test('the last usage.input anchors the estimate; later messages add chars/4; a replace falls back to chars/4 overall', () => {
    const session = new Session(header)
    turn(session, 1, 'p1', [{ text: 'x'.repeat(40), usage: 1000 }])
    turn(session, 2, 'y'.repeat(400), [{ calls: [{ id: 'a', output: 'z'.repeat(800) }] }], true)
    // 1000 + (40 + 400 + ('bash' + '{}') + 800) / 4
    expect(estimateContext(session, 10_000)).toEqual({
      tokens: 1000 + Math.ceil((40 + 400 + 6 + 800) / 4),
      basis: 'usage',
    })
    summarise(session, 's'.repeat(100), { start: 2, end: 3 })
    expect(estimateContext(session, 400)).toEqual({
      tokens: Math.ceil((400 + 100 + 400 + 6 + 800) / 4),
      basis: 'chars',
    })
  })

  test('without any usage, everything counts at chars/4, the overhead included', () => {
    const session = new Session(header)
    turn(session, 1, 'abcd', [{ text: 'efgh' }])
    expect(estimateContext(session, 8)).toEqual({ tokens: 4, basis: 'chars' })
  })

  test('an overhead given as a function runs only when no usage anchors the estimate', () => {
    const session = new Session(header)
    let asked = 0
    const overhead = () => {
      asked++
      return 8
    }
    turn(session, 1, 'abcd', [{ text: 'efgh', usage: 100 }])
    expect(estimateContext(session, overhead)).toEqual({ tokens: 100 + 1, basis: 'usage' })
    expect(asked).toBe(0)
    summarise(session, 'ijkl', { start: 2, end: 3 })
    expect(estimateContext(session, overhead).basis).toBe('chars')
    expect(asked).toBe(1)
  })
})

describe('planToCarry', () => {
  const open: TodoItem[] = [
    { content: 'a', status: 'completed' },
    { content: 'b', status: 'in_progress' },
  ]
  const done: TodoItem[] = [{ content: 'a', status: 'completed' }]

  function withPlan(todos: TodoItem[]): Session {
    const session = new Session(header)
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('todo/write', { todos })
    return session
  }

  test('the standing plan with an open item is carried, with the seq of its write', () => {
    const session = withPlan(open)
    expect(planToCarry(session.events)).toEqual({ todos: open, seq: 1 })
    session.append('turn/end', { turn: 1, reason: 'completed' })
    expect(planToCarry(session.events)).toEqual({ todos: open, seq: 1 })
  })

  test('a finished plan, or none, is not', () => {
    expect(planToCarry(withPlan(done).events)).toBeNull()
    expect(planToCarry(new Session(header).events)).toBeNull()
  })

  test('in an open turn that has not written yet, the plan that stood when it began; a turn that ended without one cleared it', () => {
    const session = withPlan(open)
    session.append('turn/end', { turn: 1, reason: 'completed' })
    session.append('turn/start', { turn: 2, trigger: 'prompt' })
    expect(planToCarry(session.events)).toEqual({ todos: open, seq: 1 })
    session.append('turn/end', { turn: 2, reason: 'completed' })
    expect(planToCarry(session.events)).toBeNull()
    session.append('turn/start', { turn: 3, trigger: 'prompt' })
    expect(planToCarry(session.events)).toBeNull()
  })
})

describe('what the model sees', () => {
  test('the plan block lists the items verbatim with their statuses, marked as reference state', () => {
    expect(
      planBlock([
        { content: 'Read the parser', status: 'completed' },
        { content: 'Fix `lex()`\nthen rerun', status: 'in_progress' },
        { content: 'Add tests', status: 'pending' },
      ]),
    ).toBe(
      [
        '<plan-state>',
        'Your todo list as you last wrote it with todo_write (state for reference; completed items are done). When you next update it, send the whole list, completed items included.',
        '- [completed] Read the parser',
        '- [in_progress] Fix `lex()`',
        '  then rerun',
        '- [pending] Add tests',
        '</plan-state>',
      ].join('\n'),
    )
  })

  test('the summary request is plain text with no tools; long tool output is cut in the middle', () => {
    const session = new Session(header)
    turn(session, 1, 'p1', [
      { calls: [{ id: 'a', name: 'bash', output: `HEAD${'x'.repeat(10_000)}TAIL` }] },
      { text: 'one' },
    ])
    const cut = { messages: session.deriveMessages() }
    const transcript = renderTranscript(cut.messages)
    expect(transcript).toContain('[User]\np1')
    expect(transcript).toContain('(calls bash {})')
    expect(transcript).toMatch(/\[bash result\]\nHEADx+\n\[… \d+ characters omitted …\]\nx+TAIL/)
    expect(transcript.length).toBeLessThan(3_000)
    const request = summaryRequest(cut.messages, { planCarried: false, maxTokens: 500, sessionId: 'units' })
    expect(request.tools).toEqual([])
    expect(request.maxTokens).toBe(500)
    expect(request.messages).toHaveLength(1)
    expect(request.messages[0]!.content.every((block) => block.type === 'text')).toBe(true)
    const tight = summaryRequest(cut.messages, {
      planCarried: true,
      maxTokens: 500,
      maxTranscriptChars: 1_000,
      sessionId: 'units',
    })
    expect(textOf(tight.messages[0]!.content)).toContain('carried separately')
    expect(textOf(tight.messages[0]!.content).length).toBeLessThan(3_000)
  })
})
