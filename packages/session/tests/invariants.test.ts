import { afterEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { InvariantError, coreProblem, type Session, type SessionEvent, type Trace } from '@keel/session'
import * as devPlugin from '@keel/session/dev'
import * as sessionPlugin from '@keel/session'
import { appendTurn, boot, useTempHome } from './helpers.ts'

useTempHome()
let ctx: Context | undefined
afterEach(async () => {
  await ctx?.stop()
  ctx = undefined
})

const append = { surfaceOp: { op: 'append' as const } }
const say = { message: { role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] } }

async function live(): Promise<Session> {
  ctx = await boot()
  return ctx.sessions.create({ cwd: '/p', persist: false })
}

/** Appends the events, then expects `last` to be vetoed with the problem, leaving the log as it was. */
function expectVeto(session: Session, last: () => unknown, problem: string | RegExp): void {
  const before = session.seq
  let error: unknown
  try {
    last()
  } catch (caught) {
    error = caught
  }
  expect(error).toBeInstanceOf(InvariantError)
  expect((error as InvariantError).code).toBe('INVARIANT')
  expect((error as Error).message).toMatch(problem)
  expect((error as Error).message).toContain(`invariant violated in session ${session.id} at seq ${before}`)
  expect(session.seq).toBe(before)
}

describe('core rules', () => {
  it('accepts well-formed turns', async () => {
    const session = await live()
    appendTurn(session, 1)
    session.append('user/message', say, append) // between turns: allowed
    appendTurn(session, 2)
    expect(session.seq).toBe(23)
  })

  it('turns: number from 1, one at a time, end only the open one, never with a step open', async () => {
    const session = await live()
    expectVeto(
      session,
      () => session.append('turn/start', { turn: 2, trigger: 'prompt' }),
      'turn 2 does not follow turn 0',
    )
    expectVeto(
      session,
      () => session.append('turn/end', { turn: 1, reason: 'completed' }),
      'turn 1 is not the open turn',
    )
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    expectVeto(session, () => session.append('turn/start', { turn: 2, trigger: 'prompt' }), 'turn 1 is still open')
    session.append('step/start', { turn: 1, step: 1 })
    expectVeto(session, () => session.append('turn/end', { turn: 1, reason: 'completed' }), 'step 1 is still open')
    session.append('step/end', { turn: 1, step: 1 })
    expectVeto(
      session,
      () => session.append('turn/end', { turn: 7, reason: 'completed' }),
      'turn 7 is not the open turn',
    )
    session.append('turn/end', { turn: 1, reason: 'completed' })
    expectVeto(
      session,
      () => session.append('turn/start', { turn: 1, trigger: 'prompt' }),
      'turn 1 does not follow turn 1',
    )
    session.append('turn/start', { turn: 2, trigger: 'continue' })
  })

  it('steps: inside the open turn, number from 1 in each turn, never overlap', async () => {
    const session = await live()
    expectVeto(
      session,
      () => session.append('step/start', { turn: 1, step: 1 }),
      'step of turn 1 outside the open turn',
    )
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    expectVeto(session, () => session.append('step/start', { turn: 1, step: 2 }), 'step 2 does not follow step 0')
    session.append('step/start', { turn: 1, step: 1 })
    expectVeto(session, () => session.append('step/start', { turn: 1, step: 2 }), 'step 1 is still open')
    expectVeto(
      session,
      () => session.append('step/end', { turn: 1, step: 2 }),
      'names turn 1 step 2, which is not the open step',
    )
    session.append('step/end', { turn: 1, step: 1 })
    expectVeto(session, () => session.append('step/end', { turn: 1, step: 1 }), 'which is not the open step')
    session.append('step/start', { turn: 1, step: 2 })
    session.append('step/end', { turn: 1, step: 2 })
    session.append('turn/end', { turn: 1, reason: 'completed' })
    session.append('turn/start', { turn: 2, trigger: 'prompt' })
    expectVeto(session, () => session.append('step/start', { turn: 2, step: 3 }), 'step 3 does not follow step 0')
    session.append('step/start', { turn: 2, step: 1 })
  })

  it('assistant messages and tool calls belong to the open step', async () => {
    const session = await live()
    const answer = (turn: number, step: number) =>
      session.append('assistant/message', { turn, step, message: { role: 'assistant', content: [] } }, append)
    expectVeto(session, () => answer(1, 1), 'names turn 1 step 1, which is not the open step')
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    expectVeto(session, () => answer(1, 1), 'not the open step')
    session.append('step/start', { turn: 1, step: 1 })
    expectVeto(session, () => answer(2, 1), 'names turn 2 step 1')
    answer(1, 1)
    expectVeto(
      session,
      () => session.append('tool/call', { turn: 1, step: 2, callId: 'c', name: 'bash', arguments: '{}' }),
      'names turn 1 step 2',
    )
    session.append('tool/call', { turn: 1, step: 1, callId: 'c', name: 'bash', arguments: '{}' })
    expectVeto(
      session,
      () => session.append('tool/call', { turn: 1, step: 1, callId: 'c', name: 'bash', arguments: '{}' }),
      'call c is already waiting for its result',
    )
  })

  it('a tool/result needs its tool/call in the same step, and answers it once', async () => {
    const session = await live()
    const result = (callId: string, step = 1, turn = 1) =>
      session.append('tool/result', { turn, step, callId, content: [], isError: false }, append)
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('step/start', { turn: 1, step: 1 })
    expectVeto(session, () => result('c'), 'result for c has no tool/call in this step')
    session.append('tool/call', { turn: 1, step: 1, callId: 'c', name: 'bash', arguments: '{}' })
    expectVeto(session, () => result('c', 2), 'names turn 1 step 2, which is not the open step')
    result('c')
    expectVeto(session, () => result('c'), 'result for c has no tool/call in this step')
    session.append('tool/call', { turn: 1, step: 1, callId: 'd', name: 'bash', arguments: '{}' })
    session.append('step/end', { turn: 1, step: 1 })
    session.append('step/start', { turn: 1, step: 2 })
    expectVeto(session, () => result('d', 2), 'result for d has no tool/call in this step') // d was called in step 1
  })

  it('non-core events only inside an open turn; user messages anywhere', async () => {
    const session = await live()
    session.append('user/message', say, append)
    expectVeto(session, () => session.append('test/note', { text: 'x' }), 'a non-core event outside an open turn')
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('test/note', { text: 'between steps is fine' })
    session.append('step/start', { turn: 1, step: 1 })
    session.append('test/note', { text: 'in a step' })
    session.append('user/message', say, append)
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: 'completed' })
    expectVeto(session, () => session.append('test/note', { text: 'x' }), 'outside an open turn')
  })

  it('checks surface metadata and seq on the event itself', () => {
    const trace: Trace = {
      nextSeq: 3,
      lastTurn: 0,
      openTurn: undefined,
      lastStep: 0,
      openStep: undefined,
      pendingCalls: new Set(),
    }
    const event = (extra: object) =>
      ({
        type: 'turn/start',
        seq: 3,
        time: 0,
        data: { turn: 1, trigger: 'prompt' },
        ...extra,
      }) as unknown as SessionEvent
    expect(coreProblem(event({}), trace)).toBeUndefined()
    expect(coreProblem(event({ seq: 5 }), trace)).toBe('seq 5 is not contiguous (expected 3)')
    expect(coreProblem(event({ surfaceOp: { op: 'append' } }), trace)).toBe('surface metadata on a non-surface event')
    expect(coreProblem(event({ sourceEventSeqs: [1] }), trace)).toBe('surface metadata on a non-surface event')
    expect(coreProblem({ type: 'user/message', seq: 3, time: 0, data: say } as unknown as SessionEvent, trace)).toBe(
      'surface event without surfaceOp',
    )
  })
})

describe('package rules', () => {
  const noShouting = (event: SessionEvent) =>
    event.type === 'test/note' && event.data.text === event.data.text.toUpperCase() ? 'no shouting' : undefined

  it('checks every later event and replays the live sessions when registered', async () => {
    ctx = await boot()
    const quiet = ctx.sessions.create({ cwd: '/p', persist: false })
    quiet.append('turn/start', { turn: 1, trigger: 'prompt' })
    quiet.append('test/note', { text: 'fine' })
    const loud = ctx.sessions.create({ cwd: '/p', persist: false })
    loud.append('turn/start', { turn: 1, trigger: 'prompt' })
    loud.append('test/note', { text: 'LOUD' })

    // Registration replays every live session: one already breaks the rule, so registering fails.
    expect(() => ctx!.invariants.register('no-shouting', noShouting)).toThrow(InvariantError)
    expect(() => ctx!.invariants.register('no-shouting', noShouting)).toThrow(
      `session ${loud.id} at seq 1 (test/note): no shouting`,
    )
    quiet.append('test/note', { text: 'STILL UNCHECKED' }) // the failed registration left nothing behind

    ctx.sessions.close(loud)
    // Registered now: the STILL UNCHECKED note already in quiet's log breaks it too.
    expect(() => ctx!.invariants.register('no-shouting', noShouting)).toThrow(`session ${quiet.id} at seq 2`)
    ctx.sessions.close(quiet)
    const rules = ctx.plugin({
      name: 'rules',
      inject: ['invariants'],
      apply: (c: Context) => {
        c.invariants.register('no-shouting', noShouting)
      },
    })
    const calm = ctx.sessions.create({ cwd: '/p', persist: false })
    calm.append('turn/start', { turn: 1, trigger: 'prompt' })
    expectVeto(calm, () => calm.append('test/note', { text: 'HEY' }), 'no shouting')
    calm.append('test/note', { text: 'hey' })
    // The rule is an effect of the plugin that registered it.
    rules.dispose()
    calm.append('test/note', { text: 'HEY' })
    // The name is free again; registering replays calm, whose log now breaks the rule.
    expect(() => ctx!.invariants.register('no-shouting', noShouting)).toThrow(
      `session ${calm.id} at seq 2 (test/note): no shouting`,
    )
  })

  it('a rule registered by a plugin checks sessions created later, from their first event', async () => {
    ctx = await boot()
    ctx.plugin({
      name: 'rules',
      inject: ['invariants'],
      apply: (c: Context) => {
        c.invariants.register('no-shouting', noShouting)
      },
    })
    const quiet = ctx.sessions.create({ cwd: '/p', persist: false })
    quiet.append('turn/start', { turn: 1, trigger: 'prompt' })
    expectVeto(quiet, () => quiet.append('test/note', { text: 'HEY' }), 'no shouting')
    quiet.append('test/note', { text: 'hey' })
    expect(quiet.seq).toBe(2)
  })

  it('refuses a second rule under the same name', async () => {
    ctx = await boot()
    ctx.invariants.register('once', () => undefined)
    expect(() => ctx!.invariants.register('once', () => undefined)).toThrow('invariant once is already registered')
  })

  it('an opened log that breaks a rule is refused and left closed', async () => {
    ctx = await boot({ dev: false })
    const session = ctx.sessions.create({ cwd: '/p', id: 'noisy' })
    session.append('test/note', { text: 'outside any turn' })
    ctx.sessions.close(session)
    ctx.plugin(devPlugin)
    expect(() => ctx!.sessions.open('noisy')).toThrow(/seq 0 \(test\/note\): a non-core event outside an open turn/)
    expect(ctx.sessions.get('noisy')).toBeUndefined()
    expect(() => ctx!.sessions.open('noisy')).toThrow(InvariantError) // not stuck half-open, not locked
  })
})

describe('HMR', () => {
  it('disposing the dev plugin removes the checks; reloading brings them back, tracking sessions already live', async () => {
    ctx = new Context()
    ctx.on('internal/warning', () => {})
    ctx.plugin(sessionPlugin)
    const dev = ctx.plugin(devPlugin)
    await ctx.start()
    const session = ctx.sessions.create({ cwd: '/p', persist: false })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    expectVeto(session, () => session.append('turn/start', { turn: 1, trigger: 'prompt' }), 'turn 1 is still open')

    dev.dispose()
    expect(ctx.get('invariants')).toBeUndefined()
    session.append('test/note', { text: 'unchecked' })
    session.append('turn/end', { turn: 1, reason: 'completed' })
    session.append('turn/end', { turn: 1, reason: 'completed' }) // would be vetoed with the checks on
    expect(session.seq).toBe(4)

    const reloaded = ctx.plugin(devPlugin)
    expect(ctx.invariants).toBeDefined()
    expectVeto(session, () => session.append('test/note', { text: 'x' }), 'a non-core event outside an open turn')
    // The reloaded service knows the live session: a rule registered now replays it (and its bad double turn/end).
    expect(() => ctx!.invariants.register('any', () => undefined)).not.toThrow()
    expect(() =>
      ctx!.invariants.register('notes', (event) => (event.type === 'test/note' ? 'no notes' : undefined)),
    ).toThrow(/seq 1 \(test\/note\): no notes/)
    reloaded.dispose()
  })
})
