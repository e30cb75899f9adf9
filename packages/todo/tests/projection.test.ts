import { afterEach, describe, expect, test } from 'vitest'
import { Context } from 'cordis'
import * as sessionPlugin from '@keel/session'
import * as devPlugin from '@keel/session/dev'
import { InvariantError, Session, SESSION_FORMAT_VERSION, type SessionEvent } from '@keel/session'
import * as toolsPlugin from '@keel/tools'
import * as todo from '@keel/todo'
import { applyPlan, lastPlan, standingPlan, todosProjection } from '@keel/todo'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const A = [{ content: 'a', status: 'in_progress' as const }]
const B = [{ content: 'a', status: 'completed' as const }]

function turnWithWrites(
  s: { append: Session['append'] },
  turn: number,
  writes: { content: string; status: 'pending' | 'in_progress' | 'completed' }[][],
) {
  s.append('turn/start', { turn, trigger: 'prompt' })
  s.append('step/start', { turn, step: 1 })
  for (const todos of writes) s.append('todo/write', { todos })
  s.append('step/end', { turn, step: 1 })
  s.append('turn/end', { turn, reason: 'completed' })
}

describe('the standing-plan rule', () => {
  test('null before the first write → list → kept at turn/end → null at the next turn/start', async () => {
    keel = await makeKeel()
    const s = keel.ctx.sessions.create({ cwd: keel.cwd, persist: false })
    const seen: unknown[] = []
    keel.ctx.projections.onChanged((session, key, value) => {
      if (session === s && key === 'todos') seen.push(value)
    })
    expect(keel.ctx.projections.get(s, 'todos')).toBeNull()
    s.append('turn/start', { turn: 1, trigger: 'prompt' })
    s.append('step/start', { turn: 1, step: 1 })
    s.append('todo/write', { todos: A })
    expect(keel.ctx.projections.get(s, 'todos')).toEqual(A)
    s.append('todo/write', { todos: B })
    s.append('step/end', { turn: 1, step: 1 })
    s.append('turn/end', { turn: 1, reason: 'completed' })
    expect(keel.ctx.projections.get(s, 'todos')).toEqual(B)
    expect(keel.ctx.projections.snapshot(s)).toEqual({ asOfSeq: s.seq - 1, values: { todos: B } })
    s.append('turn/start', { turn: 2, trigger: 'prompt' })
    expect(keel.ctx.projections.get(s, 'todos')).toBeNull()
    expect(seen).toEqual([A, B, null])
    // The pure folds agree with the projection, and lastPlan still remembers the cleared list.
    expect(standingPlan(s.events)).toBeNull()
    expect(s.events.reduce(applyPlan, null)).toBeNull()
    expect(lastPlan(s.events)).toEqual(B)
  })

  test('apply returns the same reference for events it ignores', () => {
    const state = [...A]
    const ignored = { type: 'step/end', seq: 0, time: 0, data: { turn: 1, step: 1 } } as SessionEvent
    expect(todosProjection.apply(state, ignored)).toBe(state)
    expect(
      todosProjection.apply(null, {
        type: 'turn/start',
        seq: 0,
        time: 0,
        data: { turn: 1, trigger: 'prompt' },
      } as SessionEvent),
    ).toBeNull()
  })

  test('the projection folds a seeded (reopened) log lazily', async () => {
    keel = await makeKeel()
    const header = {
      type: 'session' as const,
      version: SESSION_FORMAT_VERSION,
      id: 'seeded',
      createdAt: 0,
      cwd: '/tmp',
    }
    const source = new Session(header)
    turnWithWrites(source, 1, [A, B])
    const seeded = new Session(header, source.events)
    expect(keel.ctx.projections.get(seeded, 'todos')).toEqual(B)
  })
})

describe('invariant companion', () => {
  async function devContext() {
    const ctx = new Context()
    ctx.plugin(sessionPlugin)
    ctx.plugin(devPlugin)
    ctx.plugin(toolsPlugin)
    ctx.plugin(todo, { allowParallelInProgress: false })
    await ctx.start()
    await waitFor(() => ctx.get('invariants') && ctx.get('tools')?.get('todo_write'))
    await ctx.lifecycle.flush()
    return ctx
  }

  test.each([
    [{ todos: 'x' }, /needs a todos array/],
    [{ todos: [{ content: ' a', status: 'pending' }] }, /trimmed and non-empty/],
    [{ todos: [{ content: '', status: 'pending' }] }, /trimmed and non-empty/],
    [
      {
        todos: [
          { content: 'a', status: 'pending' },
          { content: 'a', status: 'completed' },
        ],
      },
      /duplicates "a"/,
    ],
    [{ todos: [{ content: 'a', status: 'doing' }] }, /not a known status/],
    [{ todos: [{ content: 'a', status: 'pending', extra: 1 }] }, /exactly content and status/],
  ])('rejects the bad snapshot %j before it commits', async (data, problem) => {
    const ctx = await devContext()
    const s = ctx.sessions.create({ cwd: '/tmp', persist: false })
    s.append('turn/start', { turn: 1, trigger: 'prompt' })
    const before = s.seq
    expect(() => s.append('todo/write', data as never)).toThrow(InvariantError)
    expect(() => s.append('todo/write', data as never)).toThrow(problem)
    expect(s.seq).toBe(before)
    await ctx.stop().catch(() => {})
  })

  test('accepts several in progress (logs written under a parallel policy replay) and rejects writes outside a turn', async () => {
    const ctx = await devContext()
    const s = ctx.sessions.create({ cwd: '/tmp', persist: false })
    expect(() => s.append('todo/write', { todos: A })).toThrow(/outside an open turn/)
    s.append('turn/start', { turn: 1, trigger: 'prompt' })
    expect(() =>
      s.append('todo/write', {
        todos: [
          { content: 'a', status: 'in_progress' },
          { content: 'b', status: 'in_progress' },
        ],
      }),
    ).not.toThrow()
    await ctx.stop().catch(() => {})
  })

  test('registering over a live session replays it: a bad snapshot already on the log fails the registration', async () => {
    const ctx = new Context()
    ctx.plugin(sessionPlugin)
    ctx.plugin(devPlugin)
    ctx.plugin(toolsPlugin)
    await ctx.start()
    await waitFor(() => ctx.get('invariants') && ctx.get('tools'))
    const s = ctx.sessions.create({ cwd: '/tmp', persist: false })
    s.append('turn/start', { turn: 1, trigger: 'prompt' })
    s.append('todo/write', {
      todos: [
        { content: 'dup', status: 'pending' },
        { content: 'dup', status: 'pending' },
      ],
    })
    const errors: unknown[] = []
    ctx.on('internal/error', (error: unknown) => {
      errors.push(error)
    })
    ctx.plugin(todo, { allowParallelInProgress: false })
    await waitFor(() => errors.length > 0, 'the registration error')
    expect(String(errors[0])).toMatch(/duplicates "dup"/)
    await ctx.stop().catch(() => {})
  })
})
