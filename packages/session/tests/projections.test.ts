import { appendFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import type { ProjectionDefinition, Session, SessionEvent } from '@keel/session'
import { boot, useTempHome } from './helpers.ts'

declare module '@keel/session' {
  interface ProjectionMap {
    notes: readonly string[]
    turns: number
    latest: string | null
  }
}

useTempHome()
let ctx: Context | undefined
afterEach(async () => {
  await ctx?.stop()
  ctx = undefined
})

let applied = 0
/** The latest notes written since the last turn/start: the shape of the todo plan's rule. */
const notes: ProjectionDefinition<'notes'> = {
  key: 'notes',
  version: 1,
  init: () => [],
  apply(state, event) {
    applied++
    if (event.type === 'test/note') return [...state, event.data.text]
    if (event.type === 'turn/start') return state.length ? [] : state
    return state
  },
}

/** Folds by counting turns; has no settle rule, so cold readers fold the whole file. */
const turns: ProjectionDefinition<'turns'> = {
  key: 'turns',
  version: 1,
  init: () => 0,
  apply: (state, event) => (event.type === 'turn/start' ? state + 1 : state),
}

function plugin(definition: ProjectionDefinition<never>) {
  return {
    name: `projection-${definition.key}`,
    inject: ['projections'],
    apply: (c: Context) => {
      c.projections.register(definition)
    },
  }
}

function turn(session: Session, n: number, ...texts: string[]): void {
  session.append('turn/start', { turn: n, trigger: 'prompt' })
  for (const text of texts) session.append('test/note', { text })
  session.append('turn/end', { turn: n, reason: 'completed' })
}

describe('projections', () => {
  it('registration is an effect of the registering plugin: dispose removes it, reload brings it back', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd: '/p', persist: false })
    turn(session, 1, 'a', 'b')

    const fork = ctx.plugin(plugin(notes as never))
    expect(ctx.projections.has('notes')).toBe(true)
    expect(ctx.projections.get(session, 'notes')).toEqual(['a', 'b'])

    fork.dispose()
    expect(ctx.projections.has('notes')).toBe(false)
    expect(ctx.projections.keys()).toEqual([])
    expect(ctx.projections.get(session, 'notes')).toBeUndefined()
    expect(ctx.projections.snapshot(session).values).toEqual({})

    // Events land while the unit is gone; the reloaded unit must still see them.
    turn(session, 2, 'c')
    const again = ctx.plugin(plugin(notes as never))
    expect(ctx.projections.get(session, 'notes')).toEqual(['c'])
    session.append('turn/start', { turn: 3, trigger: 'prompt' })
    session.append('test/note', { text: 'd' })
    expect(ctx.projections.get(session, 'notes')).toEqual(['d'])
    again.dispose()
    expect(ctx.projections.has('notes')).toBe(false)
  })

  it('works with the awaited fork, through a nested plugin, and refcounts two registrations of one key', async () => {
    ctx = await boot()
    const outer = await ctx.plugin({
      name: 'outer',
      inject: ['projections'],
      apply: (c: Context) => {
        c.plugin(plugin(notes as never))
      },
    })
    expect(ctx.projections.has('notes')).toBe(true)
    const second = ctx.plugin(plugin({ ...notes } as never))
    outer.dispose()
    expect(ctx.projections.has('notes')).toBe(true) // still held by the second registration
    second.dispose()
    expect(ctx.projections.has('notes')).toBe(false)
    const disposer = ctx.projections.register(turns)
    expect(() => ctx!.projections.register({ ...turns, version: 2 })).toThrow(
      'projection turns registered with version 2, but version 1 is live',
    )
    disposer()
    expect(ctx.projections.has('turns')).toBe(false)
  })

  it('folds lazily: nothing is applied until someone asks or listens', async () => {
    ctx = await boot()
    ctx.plugin(plugin(notes as never))
    const session = ctx.sessions.create({ cwd: '/p', persist: false })
    applied = 0
    for (let n = 1; n <= 50; n++) turn(session, n, `note ${n}`)
    expect(applied).toBe(0)
    expect(ctx.projections.get(session, 'notes')).toEqual(['note 50'])
    expect(applied).toBe(150) // one pass over the log
    turn(session, 51, 'x')
    expect(applied).toBe(153) // then one apply per event
    ctx.projections.get(session, 'notes')
    ctx.projections.snapshot(session)
    expect(applied).toBe(153)
  })

  it('snapshot is {asOfSeq, values} over every unit', async () => {
    ctx = await boot()
    ctx.plugin(plugin(notes as never))
    ctx.plugin(plugin(turns as never))
    const session = ctx.sessions.create({ cwd: '/p', persist: false })
    expect(ctx.projections.snapshot(session)).toEqual({ asOfSeq: -1, values: { notes: [], turns: 0 } })
    turn(session, 1, 'a')
    turn(session, 2)
    expect(ctx.projections.snapshot(session)).toEqual({ asOfSeq: 4, values: { notes: [], turns: 2 } })
    session.append('turn/start', { turn: 3, trigger: 'prompt' })
    session.append('test/note', { text: 'z' })
    expect(ctx.projections.snapshot(session)).toEqual({ asOfSeq: 6, values: { notes: ['z'], turns: 3 } })
  })

  it('onChanged reports changes only, with the seq; it is an effect too', async () => {
    ctx = await boot()
    ctx.plugin(plugin(notes as never))
    const session = ctx.sessions.create({ cwd: '/p', persist: false })
    turn(session, 1, 'before anyone listened')
    const changes: [string, unknown, number][] = []
    const listener = ctx.plugin({
      name: 'ui',
      inject: ['projections'],
      apply: (c: Context) => {
        c.projections.onChanged((s, key, value, seq) => {
          if (s === session) changes.push([key, value, seq])
        })
      },
    })
    session.append('turn/start', { turn: 2, trigger: 'prompt' }) // first touch: clears the old notes → a change
    session.append('step/start', { turn: 2, step: 1 }) // no change
    session.append('test/note', { text: 'x' })
    session.append('step/end', { turn: 2, step: 1 })
    session.append('turn/end', { turn: 2, reason: 'completed' }) // keeps the notes
    expect(changes).toEqual([
      ['notes', [], 3],
      ['notes', ['x'], 5],
    ])
    listener.dispose()
    session.append('turn/start', { turn: 3, trigger: 'prompt' })
    expect(changes).toHaveLength(2)
  })

  it('a failing unit or listener does not break the append or the other units', async () => {
    ctx = await boot()
    const warnings: string[] = []
    ctx.on('internal/warning', (message: unknown) => {
      warnings.push(String(message))
    })
    ctx.projections.register(turns)
    ctx.projections.register({
      key: 'notes',
      version: 1,
      init: () => [],
      apply: (state, event) => {
        if (event.type === 'test/note') throw new Error('unit bug')
        return state
      },
    })
    ctx.projections.onChanged(() => {
      throw new Error('listener bug')
    })
    const session = ctx.sessions.create({ cwd: '/p', persist: false })
    turn(session, 1, 'boom')
    expect(session.seq).toBe(3)
    expect(ctx.projections.get(session, 'turns')).toBe(1)
    expect(warnings.some((w) => w.includes('projection notes failed at seq 1') && w.includes('unit bug'))).toBe(true)
    expect(warnings.some((w) => w.includes('listener bug'))).toBe(true)
  })

  it('snapshotFromFile uses the settle rule from the end, folds units without one, and honours lastSeq', async () => {
    ctx = await boot()
    const settled: number[] = []
    // The todo plan's shape: the latest note, cleared by the next turn/start; settled by either, read backwards.
    const apply = (state: string | null, event: SessionEvent) =>
      event.type === 'test/note' ? event.data.text : event.type === 'turn/start' ? null : state
    ctx.projections.register({
      key: 'latest',
      version: 1,
      init: () => null,
      apply,
      settle(event) {
        settled.push(event.seq)
        if (event.type === 'test/note') return { value: event.data.text }
        if (event.type === 'turn/start') return { value: null }
        return undefined
      },
    })
    ctx.projections.register(turns)
    const session = ctx.sessions.create({ cwd: '/p', id: 'cold' })
    for (let n = 1; n <= 20; n++) turn(session, n, `n${n}`)
    const path = ctx.sessions.pathOf('cold')!
    expect(ctx.projections.snapshotFromFile(path)).toEqual({ asOfSeq: 59, values: { latest: 'n20', turns: 20 } })
    expect(settled).toEqual([59, 58]) // turn/end passed over, stopped at the note
    expect(ctx.projections.snapshotFromFile(path)).toEqual(ctx.projections.snapshot(session))

    session.append('turn/start', { turn: 21, trigger: 'prompt' })
    settled.length = 0
    expect(ctx.projections.snapshotFromFile(path)).toEqual({ asOfSeq: 60, values: { latest: null, turns: 21 } })
    expect(settled).toEqual([60])
    expect(ctx.projections.snapshotFromFile(path)).toEqual(ctx.projections.snapshot(session))

    // As of an earlier seq: later events are passed over, not settled on.
    settled.length = 0
    expect(ctx.projections.snapshotFromFile(path, 29)).toEqual({ asOfSeq: 29, values: { latest: 'n10', turns: 10 } })
    expect(settled).toEqual([29, 28]) // seq 29 is turn 10's end, 28 its note

    // A torn tail is ignored exactly as a load ignores it.
    appendFileSync(path, '{"type":"test/note","seq":61,"time":0,"data":{"text":"torn"}}')
    expect(ctx.projections.snapshotFromFile(path)).toEqual({ asOfSeq: 60, values: { latest: null, turns: 21 } })
  })
})
