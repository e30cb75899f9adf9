import { type Context, Service } from 'cordis'
import type { Session } from './session.ts'
import { CORE_EVENT_TYPES, SURFACE_EVENT_TYPES, type SessionEvent } from './types.ts'

export class InvariantError extends Error {
  readonly code = 'INVARIANT'
  constructor(sessionId: string, event: { type: string; seq: number }, problem: string) {
    super(`invariant violated in session ${sessionId} at seq ${event.seq} (${event.type}): ${problem}`)
    this.name = 'InvariantError'
  }
}

/** What the core rules track per session; package checkers may read it. */
export interface Trace {
  nextSeq: number
  lastTurn: number
  openTurn: number | undefined
  lastStep: number
  openStep: number | undefined
  pendingCalls: Set<string>
}

/** A package's own rule for its merged events; return a problem string to reject the event. */
export type InvariantCheck = (event: SessionEvent, trace: Readonly<Trace>) => string | undefined

const NONE: ReadonlySet<string> = new Set()

function newTrace(): Trace {
  return { nextSeq: 0, lastTurn: 0, openTurn: undefined, lastStep: 0, openStep: undefined, pendingCalls: new Set() }
}

/**
 * The core rules. Returns a problem, or undefined; `advance` then moves the trace. `betweenTurns` names the package
 * events that may stand outside a turn (a rewind is recorded when no turn runs).
 */
export function coreProblem(
  event: SessionEvent,
  t: Readonly<Trace>,
  betweenTurns: ReadonlySet<string> = NONE,
): string | undefined {
  if (event.seq !== t.nextSeq) return `seq ${event.seq} is not contiguous (expected ${t.nextSeq})`
  const surface = SURFACE_EVENT_TYPES.has(event.type)
  if (!surface && ('surfaceOp' in event || 'sourceEventSeqs' in event)) return 'surface metadata on a non-surface event'
  if (surface && !('surfaceOp' in event)) return 'surface event without surfaceOp'
  const named = event.data as { turn?: number; step?: number }
  switch (event.type) {
    case 'turn/start':
      if (t.openTurn !== undefined) return `turn ${t.openTurn} is still open`
      if (event.data.turn !== t.lastTurn + 1) return `turn ${event.data.turn} does not follow turn ${t.lastTurn}`
      return
    case 'turn/end':
      if (t.openTurn !== event.data.turn) return `turn ${event.data.turn} is not the open turn`
      if (t.openStep !== undefined) return `step ${t.openStep} is still open`
      return
    case 'step/start':
      if (t.openTurn !== event.data.turn) return `step of turn ${event.data.turn} outside the open turn`
      if (t.openStep !== undefined) return `step ${t.openStep} is still open`
      if (event.data.step !== t.lastStep + 1) return `step ${event.data.step} does not follow step ${t.lastStep}`
      return
    case 'step/end':
    case 'assistant/message':
      if (t.openTurn !== named.turn || t.openStep !== named.step)
        return `names turn ${named.turn} step ${named.step}, which is not the open step`
      return
    case 'tool/call':
      if (t.openTurn !== event.data.turn || t.openStep !== event.data.step)
        return `names turn ${event.data.turn} step ${event.data.step}, which is not the open step`
      if (t.pendingCalls.has(event.data.callId))
        return `call ${event.data.callId} is already waiting for its result in this step`
      return
    case 'tool/result':
      if (t.openTurn !== event.data.turn || t.openStep !== event.data.step)
        return `names turn ${event.data.turn} step ${event.data.step}, which is not the open step`
      if (!t.pendingCalls.has(event.data.callId)) return `result for ${event.data.callId} has no tool/call in this step`
      return
    case 'user/message':
      return
    default:
      if (
        !CORE_EVENT_TYPES.has((event as SessionEvent).type) &&
        t.openTurn === undefined &&
        !betweenTurns.has((event as SessionEvent).type)
      ) {
        return 'a non-core event outside an open turn'
      }
      return
  }
}

function advance(t: Trace, event: SessionEvent): void {
  t.nextSeq = event.seq + 1
  switch (event.type) {
    case 'turn/start':
      t.openTurn = event.data.turn
      t.lastTurn = event.data.turn
      t.lastStep = 0
      break
    case 'turn/end':
      t.openTurn = undefined
      t.pendingCalls.clear()
      break
    case 'step/start':
      t.openStep = event.data.step
      t.lastStep = event.data.step
      t.pendingCalls.clear()
      break
    case 'step/end':
      t.openStep = undefined
      break
    case 'tool/call':
      t.pendingCalls.add(event.data.callId)
      break
    case 'tool/result':
      t.pendingCalls.delete(event.data.callId)
      break
  }
}

/**
 * `ctx.invariants` (dev mode): checks every event before it commits and throws InvariantError to veto it.
 * Packages add rules for their own events with `register`, which first replays every live session.
 */
export class Invariants extends Service {
  private readonly traces = new WeakMap<Session, Trace>()
  private readonly checks = new Map<string, InvariantCheck>()
  private readonly sessions = new Set<Session>()
  private readonly betweenTurns = new Set<string>()

  constructor(ctx: Context) {
    super(ctx, 'invariants', true)
    // Sessions already live when this plugin (re)loads: tracked so `register` replays them; their traces build lazily.
    const store = ctx.get('sessions') as { liveSessions?(): Session[] } | undefined
    for (const session of store?.liveSessions?.() ?? []) this.sessions.add(session)
    ctx.on('session/created', (session) => {
      this.sessions.add(session)
      this.replay(session, [...this.checks.values()], true)
    })
    ctx.on('session/closed', (session) => this.sessions.delete(session))
    ctx.on('session/validate', (session, event) => {
      const trace = this.trace(session)
      const problem = coreProblem(event, trace, this.betweenTurns) ?? this.packageProblem(event, trace)
      if (problem) throw new InvariantError(session.id, event, problem)
    })
    ctx.on('session/event', (session, event) => advance(this.trace(session), event))
  }

  register(name: string, check: InvariantCheck): () => void {
    return this.ctx.effect(() => {
      if (this.checks.has(name)) throw new Error(`invariant ${name} is already registered`)
      for (const session of this.sessions) this.replay(session, [check], false)
      this.checks.set(name, check)
      return () => this.checks.delete(name)
    })
  }

  /** Lets a package's event type stand between turns (disposable, like `register`). */
  allowBetweenTurns(type: string): () => void {
    return this.ctx.effect(() => {
      this.betweenTurns.add(type)
      return () => this.betweenTurns.delete(type)
    })
  }

  private trace(session: Session): Trace {
    let trace = this.traces.get(session)
    if (!trace) {
      trace = newTrace()
      for (const event of session.events) advance(trace, event)
      this.traces.set(session, trace)
    }
    return trace
  }

  private packageProblem(event: SessionEvent, trace: Trace): string | undefined {
    for (const check of this.checks.values()) {
      const problem = check(event, trace)
      if (problem) return problem
    }
    return undefined
  }

  /** Re-checks a session's existing log (a seed, or a log already live when a rule arrives). */
  private replay(session: Session, checks: InvariantCheck[], core: boolean): void {
    const trace = newTrace()
    for (const event of session.events) {
      const problem =
        (core ? coreProblem(event, trace, this.betweenTurns) : undefined) ??
        checks.map((check) => check(event, trace)).find(Boolean)
      if (problem) throw new InvariantError(session.id, event, problem)
      advance(trace, event)
    }
    if (core) this.traces.set(session, trace)
  }
}

declare module 'cordis' {
  interface Context {
    invariants: Invariants
  }
}
