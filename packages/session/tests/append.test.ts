import { describe, expect, it } from 'vitest'
import {
  JsonValueError,
  SeedError,
  Session,
  SurfaceError,
  frozenJsonCopy,
  type Message,
  type SessionEvent,
} from '@keel/session'
import { appendTurn, header } from './helpers.ts'

const user = (text: string) => ({ message: { role: 'user' as const, content: [{ type: 'text' as const, text }] } })
const append = { surfaceOp: { op: 'append' as const } }

function isDeepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true
  if (!Object.isFrozen(value)) return false
  return Object.values(value).every(isDeepFrozen)
}

describe('append: frozen JSON-clean copies', () => {
  it('stores a deep-frozen copy that the caller can no longer change', () => {
    const session = new Session(header())
    const data = { turn: 1, trigger: 'prompt' as const }
    const message = { role: 'user' as const, content: [{ type: 'text' as const, text: 'hello' }] }
    const started = session.append('turn/start', data)
    const said = session.append('user/message', { message }, append)

    data.turn = 99
    message.content[0]!.text = 'changed'
    message.content.push({ type: 'text', text: 'more' })

    expect(started.data.turn).toBe(1)
    expect(session.at(1)).toBe(said)
    expect(said.data.message.content).toEqual([{ type: 'text', text: 'hello' }])
    expect(said.data.message).not.toBe(message)
    expect(isDeepFrozen(said)).toBe(true)
    expect(() => {
      ;(said.data.message.content as { text: string }[])[0]!.text = 'x'
    }).toThrow(TypeError)
    expect(JSON.parse(JSON.stringify(said))).toEqual(said)
  })

  it('numbers seq contiguously from 0, equal to the index', () => {
    const session = new Session(header())
    expect(session.seq).toBe(0)
    appendTurn(session, 1)
    appendTurn(session, 2)
    const events = session.events
    expect(events.length).toBe(22)
    for (const [index, event] of events.entries()) expect(event.seq).toBe(index)
    expect(session.seq).toBe(22)
    expect(session.last?.seq).toBe(21)
    expect(Object.isFrozen(events)).toBe(true)
    expect(session.events).toBe(events) // reused until the next append
    session.append('turn/start', { turn: 3, trigger: 'prompt' })
    expect(session.events).not.toBe(events)
    expect(events.length).toBe(22)
  })

  it.each([
    ['undefined', { turn: 1, trigger: 'prompt', extra: undefined }, 'data.extra', 'undefined'],
    ['a function', { turn: 1, trigger: 'prompt', nested: { fn: () => 1 } }, 'data.nested.fn', 'a function'],
    ['NaN', { turn: Number.NaN, trigger: 'prompt' }, 'data.turn', 'NaN is not a finite number'],
    ['Infinity', { turn: 1, trigger: 'prompt', list: [1, Number.POSITIVE_INFINITY] }, 'data.list[1]', 'Infinity'],
    ['a Date', { turn: 1, trigger: 'prompt', when: new Date(0) }, 'data.when', 'an instance of Date'],
    ['a Map', { turn: 1, trigger: 'prompt', map: new Map() }, 'data.map', 'an instance of Map'],
    [
      'a class instance',
      {
        turn: 1,
        trigger: 'prompt',
        x: new (class Point {
          x = 1
        })(),
      },
      'data.x',
      'an instance of Point',
    ],
    ['a bigint', { turn: 1, trigger: 'prompt', big: 1n }, 'data.big', 'a bigint'],
    ['a symbol', { turn: 1, trigger: 'prompt', sym: Symbol('s') }, 'data.sym', 'a symbol'],
    // eslint-disable-next-line no-sparse-arrays
    // biome-ignore lint/suspicious/noSparseArray: the hole is the input under test
    ['a sparse array', { turn: 1, trigger: 'prompt', holes: [1, , 3] }, 'data.holes[1]', 'sparse'],
  ])('refuses %s with an error naming the path', (_, data, path, what) => {
    const session = new Session(header())
    const attempt = () => session.append('turn/start', data as never)
    expect(attempt).toThrow(JsonValueError)
    expect(attempt).toThrow(path)
    expect(attempt).toThrow(what)
    expect(session.seq).toBe(0)
  })

  it('refuses a cycle, naming where it closes', () => {
    const session = new Session(header())
    const content: unknown[] = [{ type: 'text', text: 'x' }]
    const block = { type: 'text', text: 'loop', self: content }
    content.push(block)
    const attempt = () => session.append('user/message', { message: { role: 'user', content } } as never, append)
    expect(attempt).toThrow(/not JSON at user\/message\.data\.message\.content\[1\]\.self: a cycle/)
    expect(session.seq).toBe(0)
  })

  it('accepts shared (acyclic) references, turns -0 into 0, and keeps a "__proto__" key as data', () => {
    const shared = { type: 'text', text: 'same' }
    const copy = frozenJsonCopy({ a: shared, b: shared, zero: -0, ...JSON.parse('{"__proto__":{"polluted":true}}') })
    expect(copy.a).toEqual(shared)
    expect(copy.b).toEqual(shared)
    expect(Object.is(copy.zero, 0)).toBe(true)
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.keys(copy)).toContain('__proto__')
    expect((copy as Record<string, unknown>).polluted).toBeUndefined()
    expect(JSON.stringify(copy)).toContain('"__proto__":{"polluted":true}')
  })

  it('refuses a re-entrant append from inside a hook', () => {
    const session = new Session(header(), [], {
      afterCommit: (s, event) => {
        if (event.type === 'turn/start') s.append('turn/end', { turn: 1, reason: 'completed' })
      },
    })
    expect(() => session.append('turn/start', { turn: 1, trigger: 'prompt' })).toThrow(/re-entrant append of turn\/end/)
    expect(session.seq).toBe(1)
  })

  it('commits nothing when beforeCommit or persist throws', () => {
    const order: string[] = []
    let failPersist = false
    const session = new Session(header(), [], {
      beforeCommit: (_, event) => {
        order.push(`validate ${event.seq}`)
        if (event.type === 'turn/end') throw new Error('vetoed')
      },
      persist: (_, event) => {
        order.push(`persist ${event.seq}`)
        if (failPersist) throw new Error('disk full')
      },
      afterCommit: (_, event) => order.push(`publish ${event.seq}`),
    })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    expect(() => session.append('turn/end', { turn: 1, reason: 'completed' })).toThrow('vetoed')
    failPersist = true
    expect(() => session.append('step/start', { turn: 1, step: 1 })).toThrow('disk full')
    expect(session.seq).toBe(1)
    failPersist = false
    expect(session.append('step/start', { turn: 1, step: 1 }).seq).toBe(1)
    expect(order).toEqual([
      'validate 0',
      'persist 0',
      'publish 0',
      'validate 1',
      'validate 1',
      'persist 1',
      'validate 1',
      'persist 1',
      'publish 1',
    ])
  })
})

describe('surface rules', () => {
  it('requires surfaceOp on surface types and forbids it elsewhere, at compile time and at run time', () => {
    const session = new Session(header())
    // @ts-expect-error user/message is a surface event: surfaceOp is required
    expect(() => session.append('user/message', user('hi'))).toThrow(SurfaceError)
    const bareAssistant = { turn: 1, step: 1, message: { role: 'assistant' as const, content: [] } }
    // @ts-expect-error assistant/message is a surface event: surfaceOp is required
    expect(() => session.append('assistant/message', bareAssistant)).toThrow(/needs a surfaceOp/)
    // @ts-expect-error tool/result is a surface event: surfaceOp is required
    expect(() => session.append('tool/result', { turn: 1, step: 1, callId: 'c', content: [], isError: false })).toThrow(
      /needs a surfaceOp/,
    )
    // @ts-expect-error turn/start is not a surface event: no surface metadata allowed
    expect(() => session.append('turn/start', { turn: 1, trigger: 'prompt' }, append)).toThrow(
      /must not carry surfaceOp/,
    )
    const call = { turn: 1, step: 1, callId: 'c', name: 'n', arguments: '{}' }
    const meta = { surfaceOp: { op: 'append' as const }, sourceEventSeqs: [] }
    // @ts-expect-error tool/call is not a surface event
    expect(() => session.append('tool/call', call, meta)).toThrow(SurfaceError)
    // @ts-expect-error extension events are never surface events
    expect(() => session.append('test/note', { text: 'x' }, append)).toThrow(SurfaceError)
    expect(() => session.append('user/message', user('x'), { surfaceOp: { op: 'bogus' } } as never)).toThrow(
      /unknown surfaceOp/,
    )
    expect(() =>
      session.append('user/message', user('x'), { surfaceOp: { op: 'append' }, sourceEventSeqs: [0] }),
    ).toThrow(/cites seq 0, which is not an earlier event/)
    expect(session.seq).toBe(0)
    // And the well-formed calls type-check and run.
    session.append('user/message', user('hi'), append)
    session.append('test/note', { text: 'ok' })
    expect(session.seq).toBe(2)
  })

  it('folds only surface events into messages', () => {
    const session = new Session(header())
    appendTurn(session, 1)
    session.append('turn/start', { turn: 2, trigger: 'prompt' })
    session.append('test/note', { text: 'not a message' })
    session.append('step/start', { turn: 2, step: 1 })
    session.append('assistant/message', { turn: 2, step: 1, message: { role: 'assistant', content: [] } }, append) // empty: no message
    const messages = session.deriveMessages()
    expect(messages).toEqual<Message[]>([
      { role: 'user', content: [{ type: 'text', text: 'prompt 1' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', id: 'call-1', name: 'bash', arguments: '{"command":"ls"}' }],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'call-1', content: [{ type: 'text', text: 'a\nb' }], isError: false },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'done 1' }] },
    ])
    expect(session.surfaceNodes).toEqual([2, 3, 5, 8, 14])
  })

  it('folds each surface event once: a second deriveMessages call re-folds nothing', () => {
    const session = new Session(header())
    for (let turn = 1; turn <= 100; turn++) appendTurn(session, turn)
    expect(session.surfaceFolds).toBe(400)
    const first = session.deriveMessages()
    const second = session.deriveMessages()
    expect(session.surfaceFolds).toBe(400)
    expect(second).toEqual(first)
    expect(second).not.toBe(first) // a fresh array each time...
    first.length = 0
    expect(session.deriveMessages()).toHaveLength(400) // ...so a caller's changes do not reach the cache
    appendTurn(session, 101)
    expect(session.deriveMessages()).toHaveLength(404)
    expect(session.surfaceFolds).toBe(404)
    const tool = second[2]!
    expect(Object.isFrozen(tool) && Object.isFrozen(tool.content)).toBe(true)
  })

  it('replace splices the surface (compaction), also over an earlier replacement', () => {
    const session = new Session(header())
    appendTurn(session, 1) // surface nodes 2, 3, 5, 8
    appendTurn(session, 2) // surface nodes 13, 14, 16, 19
    const summary = (text: string) => ({
      message: { role: 'user' as const, source: 'compaction' as const, content: [{ type: 'text' as const, text }] },
    })

    // Compact turn 1 (seq 0..10) into one summary message.
    const first = session.append('user/message', summary('turn 1 summary'), {
      surfaceOp: { op: 'replace', start: 0, end: 10 },
      sourceEventSeqs: [2, 3, 5, 8],
    })
    expect(first.seq).toBe(22)
    expect(session.surfaceNodes).toEqual([22, 13, 14, 16, 19])
    expect(session.deriveMessages().map((m) => m.content[0])).toEqual([
      { type: 'text', text: 'turn 1 summary' },
      { type: 'text', text: 'prompt 2' },
      expect.objectContaining({ type: 'tool-call' }),
      expect.objectContaining({ type: 'tool-result' }),
      { type: 'text', text: 'done 2' },
    ])
    const folds = session.surfaceFolds

    // Appends after a replace land at the end.
    session.append('user/message', user('later'), append)
    expect(session.surfaceNodes).toEqual([22, 13, 14, 16, 19, 23])

    // Nodes in a range must stand together: [19, 23] takes in 19 and 23 but they are adjacent; [14, 22] is not.
    expect(() =>
      session.append('user/message', summary('x'), { surfaceOp: { op: 'replace', start: 14, end: 22 } }),
    ).toThrow(/not adjacent/)
    expect(() =>
      session.append('user/message', summary('x'), { surfaceOp: { op: 'replace', start: 9, end: 12 } }),
    ).toThrow(/covers no surface message/)
    expect(() =>
      session.append('user/message', summary('x'), { surfaceOp: { op: 'replace', start: 5, end: 24 } }),
    ).toThrow(/not a range of earlier events/)
    expect(() =>
      session.append('user/message', summary('x'), { surfaceOp: { op: 'replace', start: 3, end: 2 } }),
    ).toThrow(/not a range of earlier events/)

    // Compact everything so far, the first summary included, into one.
    session.append('user/message', summary('all so far'), { surfaceOp: { op: 'replace', start: 11, end: 23 } })
    expect(session.surfaceNodes).toEqual([24])
    expect(session.deriveMessages()).toEqual([
      { role: 'user', source: 'compaction', content: [{ type: 'text', text: 'all so far' }] },
    ])
    expect(session.surfaceFolds).toBe(folds + 2)

    // A session seeded from the same log derives the same messages.
    const reloaded = new Session(header(), JSON.parse(JSON.stringify(session.events)) as SessionEvent[])
    expect(reloaded.deriveMessages()).toEqual(session.deriveMessages())
    expect(reloaded.surfaceNodes).toEqual([24])
  })
})

describe('seeding', () => {
  it('freezes seed copies and refuses a gap or bad surface metadata, naming the seq', () => {
    const source = new Session(header())
    appendTurn(source, 1)
    const events = JSON.parse(JSON.stringify(source.events)) as SessionEvent[]
    const seeded = new Session(header(), events)
    expect(seeded.seq).toBe(11)
    expect(seeded.at(2)).not.toBe(events[2])
    expect(isDeepFrozen(seeded.at(2))).toBe(true)
    expect(seeded.deriveMessages()).toEqual(source.deriveMessages())

    const gap = events.filter((event) => event.seq !== 4)
    expect(() => new Session(header(), gap)).toThrow(SeedError)
    expect(() => new Session(header(), gap)).toThrow('expected seq 4, got 5')

    const stripped = events.map((event) =>
      event.seq === 3 ? { ...event, surfaceOp: undefined } : event,
    ) as SessionEvent[]
    let error: SeedError | undefined
    try {
      new Session(header(), stripped)
    } catch (caught) {
      error = caught as SeedError
    }
    expect(error).toBeInstanceOf(SeedError)
    expect(error!.seq).toBe(3)
    expect(error!.message).toMatch(/seed event 3 \(assistant\/message\).*needs a surfaceOp/)
  })
})
