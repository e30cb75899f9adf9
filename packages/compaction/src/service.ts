import { type Context, Service } from 'cordis'
import { systemPrompt, type Agent } from '@keel/agent'
import { errorLine, type Session, type SessionEvent } from '@keel/session'
import { requestCost } from '@keel/session/cost'
import type { TokenUsage } from '@keel/session/messages'
import { chooseCut, type Cut } from './cut.ts'
import { charsToTokens, estimateContext, messageChars, type ContextEstimate } from './estimate.ts'
import { planToCarry } from './plan.ts'
import { summaryRequest, summaryText } from './prompt.ts'
import { applyTrims, MIN_KEPT_CHARS, TRIM_NOTE_CHARS, trimsOf } from './trim.ts'
import type { CompactionOutcome, CompactionReason, CompactOptions } from './types.ts'

declare module 'cordis' {
  interface Context {
    compaction: Compaction
  }
}

export interface Config {
  auto: boolean
  threshold: number
  /** 0: take the window from the model (`agent.model.contextWindow`). */
  contextWindow: number
  keepTurns: number
  maxSummaryTokens: number
}

/** A summary made while the agent was idle, waiting for the next request to be committed inside a turn. */
interface Prepared {
  cut: Cut
  text: string
  planSeq: number | undefined
  outcome: CompactionOutcome
  billed: Billed
}

/** What the summary request reported and cost, for `compaction/end`. */
type Billed = { usage?: TokenUsage; costUsd?: number }

interface AgentState {
  /** A manual compaction asked for mid-turn: the next request boundary runs it. */
  queued?: { promise: Promise<CompactionOutcome>; resolve(outcome: CompactionOutcome): void; signal?: AbortSignal }
  /** An idle manual compaction whose summary request is in flight. */
  preparing?: Promise<CompactionOutcome>
  prepared?: Prepared
  /** The turn in which an attempt already came to nothing (failed, or nothing to summarise): no retry in it. */
  settled?: { turn: number; outcome: CompactionOutcome }
}

const SUMMARY_OVERHEAD_TOKENS = 600
/** Conservative on purpose when sizing the summariser's input: code runs nearer 3 characters per token than 4. */
const BUDGET_CHARS_PER_TOKEN = 3

/**
 * `ctx.compaction`: summarises the older part of a conversation when the next request would pass `threshold` of
 * the model's context window (at `agent/prepare`), or when asked (`compact`). The summary is a surface
 * `user/message` that replaces the summarised messages, so `deriveMessages()` shrinks while the log keeps everything.
 */
export class Compaction extends Service {
  private readonly states = new WeakMap<Agent, AgentState>()

  constructor(
    ctx: Context,
    readonly config: Config,
  ) {
    super(ctx, 'compaction', true)
    ctx.on('agent/prepare', (agent, signal) => this.beforeRequest(agent, signal))
    ctx.on('agent/request', (agent, request) => applyTrims(request.messages, trimsOf(agent.session)))
    ctx.on('agent/status', (agent, status) => {
      if (status === 'disposed') this.forget(agent)
    })
  }

  /** The window compaction works against, or undefined when neither config nor model knows it. */
  windowOf(agent: Agent): number | undefined {
    return this.config.contextWindow || agent.model.contextWindow || undefined
  }

  /** Estimated tokens of the agent's next request (see estimate.ts). */
  estimate(agent: Agent): ContextEstimate {
    return estimateContext(agent.session, () => this.overheadChars(agent), trimsOf(agent.session))
  }

  /**
   * Compacts now if the agent is idle: the summary request runs at once and the outcome says `next-request`, because
   * log events need an open turn — the summary is committed when the next request is prepared. Mid-turn, it runs
   * at the next request boundary and resolves then. Failures resolve with `ok: false` and a one-line `error`; only
   * a closed agent rejects.
   */
  compact(agent: Agent, options: CompactOptions = {}): Promise<CompactionOutcome> {
    if (agent.status === 'disposed') return Promise.reject(new Error(`agent ${agent.id} is closed`))
    const state = this.stateOf(agent)
    if (agent.status === 'running') {
      if (!state.queued) {
        let resolve!: (outcome: CompactionOutcome) => void
        const promise = new Promise<CompactionOutcome>((done) => {
          resolve = done
        })
        state.queued = { promise, resolve, ...(options.signal ? { signal: options.signal } : {}) }
      }
      const queued = state.queued
      options.signal?.addEventListener(
        'abort',
        () => {
          if (state.queued !== queued) return
          state.queued = undefined
          const before = this.estimate(agent).tokens
          queued.resolve({ ok: false, reason: 'manual', before, after: before, summarised: 0, error: 'cancelled' })
        },
        { once: true },
      )
      return queued.promise
    }
    if (state.preparing) return state.preparing
    if (state.prepared) return Promise.resolve(state.prepared.outcome)
    const preparing = this.prepareIdle(agent, options.signal).finally(() => {
      if (state.preparing === preparing) state.preparing = undefined
    })
    state.preparing = preparing
    return preparing
  }

  // A UI listener that throws must not break the turn it is watching.
  private running(agent: Agent, info: { reason: CompactionReason; before: number }): void {
    try {
      this.ctx.emit('compaction/running', agent, info)
    } catch (error) {
      this.ctx.logger('compaction').warn(`a compaction/running listener threw: ${errorLine(error)}`)
    }
  }

  private done(agent: Agent, outcome: CompactionOutcome): void {
    try {
      this.ctx.emit('compaction/done', agent, outcome)
    } catch (error) {
      this.ctx.logger('compaction').warn(`a compaction/done listener threw: ${errorLine(error)}`)
    }
  }

  private stateOf(agent: Agent): AgentState {
    let state = this.states.get(agent)
    if (!state) this.states.set(agent, (state = {}))
    return state
  }

  private forget(agent: Agent): void {
    const state = this.states.get(agent)
    if (!state) return
    this.states.delete(agent)
    if (state.queued) {
      const before = this.estimate(agent).tokens
      state.queued.resolve({
        ok: false,
        reason: 'manual',
        before,
        after: before,
        summarised: 0,
        error: 'the agent was closed',
      })
    }
  }

  private overheadChars(agent: Agent): number {
    const tools = this.ctx.tools.schemas(agent.options.excludeTools ?? [])
    const system = agent.options.system ?? systemPrompt(agent.cwd)
    return system.length + JSON.stringify(tools).length
  }

  /** `agent/prepare`: commit or run a manual compaction, then compact automatically when over the threshold. */
  private async beforeRequest(agent: Agent, signal: AbortSignal): Promise<void> {
    const state = this.stateOf(agent)
    if (state.preparing) await untilAborted(state.preparing, signal)
    let attempt: CompactionOutcome | undefined
    const prepared = state.prepared
    if (prepared) {
      state.prepared = undefined
      attempt = this.commitPrepared(agent, prepared)
    }
    const queued = state.queued
    if (queued) {
      state.queued = undefined
      attempt = await this.run(agent, 'manual', signal, queued.signal).catch((error) => {
        queued.resolve({ ok: false, reason: 'manual', before: 0, after: 0, summarised: 0, error: errorLine(error) })
        throw error
      })
      queued.resolve(attempt)
    }
    const window = this.windowOf(agent)
    if (!window) return
    let tokens = this.estimate(agent).tokens
    if (this.config.auto && !attempt && tokens > this.config.threshold * window) {
      const turn = currentTurn(agent.session)
      if (state.settled?.turn === turn) {
        attempt = state.settled.outcome
      } else {
        attempt = await this.run(agent, 'auto', signal)
        if (!attempt.ok) state.settled = { turn, outcome: attempt }
        tokens = this.estimate(agent).tokens
      }
    }
    // Still too big: the new tool results themselves are; cut them in what the model sees.
    if (tokens > window) tokens = this.trimFresh(agent, window, tokens)
    if (this.config.auto && tokens > window) {
      const size = `~${tokens} of ${window} tokens`
      if (attempt && !attempt.ok) throw new Error(`context is full (${size}) and compaction failed: ${attempt.error}`)
      const keep = this.config.keepTurns
      throw new Error(
        `context is still ${size} after compaction: the last ${keep} turn${keep === 1 ? '' : 's'} alone do not fit`,
      )
    }
  }

  /**
   * Cuts the tool results the model has not been sent yet (those after the latest reply), largest first, until the
   * request is back under the threshold, each to no less than MIN_KEPT_CHARS. Each cut is a `compaction/trim` event,
   * so later requests and a resumed session cut the same way; the log keeps the results whole.
   */
  private trimFresh(agent: Agent, window: number, tokens: number): number {
    const session = agent.session
    const trims = trimsOf(session)
    const fresh: SessionEvent<'tool/result'>[] = []
    for (let seq = session.seq - 1; seq >= 0; seq--) {
      const event = session.at(seq)!
      if (event.type === 'assistant/message' || event.type === 'turn/start') break
      if (event.type === 'tool/result' && !trims.has(event.data.callId)) fresh.push(event)
    }
    const textChars = (event: SessionEvent<'tool/result'>) =>
      event.data.content.reduce((sum, block) => sum + (block.type === 'text' ? block.text.length : 0), 0)
    const target = Math.floor(this.config.threshold * window)
    const turn = currentTurn(session)
    for (const result of fresh.sort((a, b) => textChars(b) - textChars(a))) {
      if (tokens <= target) break
      const chars = textChars(result)
      const kept = Math.max(MIN_KEPT_CHARS, chars - (tokens - target) * 4 - TRIM_NOTE_CHARS)
      if (kept >= chars) continue
      session.append('compaction/trim', { turn, callId: result.data.callId, chars, kept })
      tokens = this.estimate(agent).tokens
    }
    return tokens
  }

  /**
   * A whole compaction inside the open turn: summary request, replace, log events. `signal` is the turn's; `caller`
   * (a manual request's own) aborts only the summary. Throws only when the turn is cancelled.
   */
  private async run(
    agent: Agent,
    reason: CompactionReason,
    signal: AbortSignal,
    caller?: AbortSignal,
  ): Promise<CompactionOutcome> {
    const session = agent.session
    const before = this.estimate(agent).tokens
    const cut = chooseCut(session, this.config.keepTurns)
    if (!cut) return this.nothingToDo(reason, before)
    const turn = currentTurn(session)
    session.append('compaction/start', { turn, reason, before })
    this.running(agent, { reason, before })
    const plan = planToCarry(session.events)
    let outcome: CompactionOutcome
    try {
      const { text: summary, billed } = await this.summarise(
        agent,
        cut,
        plan !== null,
        caller ? AbortSignal.any([signal, caller]) : signal,
      )
      if (!intact(session, cut)) throw new Error('the history changed while it was being summarised')
      this.append(session, cut, summaryText(summary, plan?.todos ?? null), plan?.seq)
      outcome = {
        ok: true,
        reason,
        before,
        after: this.estimate(agent).tokens,
        summarised: cut.messages.length,
        applied: 'now',
      }
      session.append('compaction/end', {
        turn,
        before,
        after: outcome.after,
        summarised: outcome.summarised,
        ...billed,
      })
    } catch (error) {
      outcome = {
        ok: false,
        reason,
        before,
        after: before,
        summarised: 0,
        error: signal.aborted || caller?.aborted ? 'cancelled' : errorLine(error),
      }
      session.append('compaction/end', { turn, before, after: before, summarised: 0, error: outcome.error! })
      this.done(agent, outcome)
      if (signal.aborted) throw error
      return outcome
    }
    this.done(agent, outcome)
    return outcome
  }

  private async prepareIdle(agent: Agent, signal: AbortSignal | undefined): Promise<CompactionOutcome> {
    const session = agent.session
    const before = this.estimate(agent).tokens
    const cut = chooseCut(session, this.config.keepTurns)
    if (!cut) return this.nothingToDo('manual', before)
    this.running(agent, { reason: 'manual', before })
    const plan = planToCarry(session.events)
    let outcome: CompactionOutcome
    try {
      const { text: summary, billed } = await this.summarise(
        agent,
        cut,
        plan !== null,
        signal ?? new AbortController().signal,
      )
      const text = summaryText(summary, plan?.todos ?? null)
      let chars = this.overheadChars(agent) + text.length
      for (const message of session.deriveMessages()) chars += messageChars(message)
      for (const message of cut.messages) chars -= messageChars(message)
      outcome = {
        ok: true,
        reason: 'manual',
        before,
        after: charsToTokens(chars),
        summarised: cut.messages.length,
        applied: 'next-request',
      }
      if (this.states.get(agent)) this.stateOf(agent).prepared = { cut, text, planSeq: plan?.seq, outcome, billed }
    } catch (error) {
      outcome = {
        ok: false,
        reason: 'manual',
        before,
        after: before,
        summarised: 0,
        error: signal?.aborted ? 'cancelled' : errorLine(error),
      }
    }
    this.done(agent, outcome)
    return outcome
  }

  /** Commits an idle manual summary at the first request boundary after it; dropped if the history moved under it. */
  private commitPrepared(agent: Agent, prepared: Prepared): CompactionOutcome | undefined {
    const session = agent.session
    if (!intact(session, prepared.cut)) return undefined
    const turn = currentTurn(session)
    const before = this.estimate(agent).tokens
    session.append('compaction/start', { turn, reason: 'manual', before })
    this.append(session, prepared.cut, prepared.text, prepared.planSeq)
    const after = this.estimate(agent).tokens
    session.append('compaction/end', {
      turn,
      before,
      after,
      summarised: prepared.outcome.summarised,
      ...prepared.billed,
    })
    return { ...prepared.outcome, before, after, applied: 'now' }
  }

  private append(session: Session, cut: Cut, text: string, planSeq: number | undefined): void {
    session.append(
      'user/message',
      { message: { role: 'user', source: 'compaction', content: [{ type: 'text', text }] } },
      {
        surfaceOp: { op: 'replace', start: cut.start, end: cut.end },
        ...(planSeq !== undefined ? { sourceEventSeqs: [planSeq] } : {}),
      },
    )
  }

  private async summarise(
    agent: Agent,
    cut: Cut,
    planCarried: boolean,
    signal: AbortSignal,
  ): Promise<{ text: string; billed: Billed }> {
    const window = this.windowOf(agent)
    const maxTokens = this.config.maxSummaryTokens
    const maxTranscriptChars = window
      ? (window - maxTokens - SUMMARY_OVERHEAD_TOKENS) * BUDGET_CHARS_PER_TOKEN
      : undefined
    const request = summaryRequest(cut.messages, { planCarried, maxTokens, maxTranscriptChars, sessionId: agent.id })
    let text = ''
    let usage: TokenUsage | undefined
    for await (const chunk of agent.model.stream(request, signal)) {
      if (chunk.type === 'text-delta') text += chunk.text
      else if (chunk.type === 'usage') usage = chunk.usage
    }
    if (!text.trim()) throw new Error('the model returned an empty summary')
    const price = agent.model.price
    return { text, billed: usage ? { usage, ...(price ? { costUsd: requestCost(usage, price) } : {}) } : {} }
  }

  private nothingToDo(reason: CompactionReason, before: number): CompactionOutcome {
    const keep = this.config.keepTurns
    return {
      ok: false,
      reason,
      before,
      after: before,
      summarised: 0,
      error: `nothing older than the last ${keep} turn${keep === 1 ? '' : 's'} to summarise`,
    }
  }
}

/** The run is still where it was on the surface (nothing replaced it meanwhile). */
function intact(session: Session, cut: Cut): boolean {
  const nodes = session.surfaceNodes
  if (nodes.length < cut.to) return false
  for (let i = cut.from; i < cut.to; i++) if (nodes[i] !== cut.nodes[i - cut.from]) return false
  return true
}

function currentTurn(session: Session): number {
  for (let seq = session.seq - 1; seq >= 0; seq--) {
    const event = session.at(seq)!
    if (event.type === 'turn/start') return event.data.turn
  }
  return 0
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((done, fail) => {
    const onAbort = () => fail(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(done, fail).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
