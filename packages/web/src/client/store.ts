// The page's model of one conversation, free of React and of the browser so it runs (and is tested) in Node.
//
// It holds a window of the log (the tail page, then older pages prepended) plus live events from the event
// stream, and derives a ConversationSnapshot from it. Its rows are the entries of @keel/door's transcript fold over
// the window (the fold every door shows), with the host's call views and the page's words. The plan (`todos`) follows the one rule every Keel surface
// uses, imported from @keel/todo/plan (`settlePlan`: a `todo/write` sets it, the next `turn/start` clears it). A window rebuilt from a tail page starts from the
// host's value for the whole log (its `projections` block; absent means empty), because the write that set the
// plan may lie before the window. Older pages never reseed it.
import { imageLabel } from '@keel/session/image'
import type {
  CallView,
  HistoryEntry,
  HistoryPage,
  HistoryParams,
  ModelInfo,
  PermissionAsk,
  ServerFrame,
  UsageSummary,
} from '../protocol.ts'
import type { SessionEvent, ToolResultDetails } from '@keel/session'
import { addRequest, addTotal, type CostTotal } from '@keel/session/cost'
import type { TokenUsage } from '@keel/session/messages'
import type { RetryNotice } from '@keel/llm/retry-text'
import {
  emptyTranscript,
  foldEvent,
  type ToolStatus,
  type TranscriptEntry,
  type RunningJob,
  type TranscriptState,
} from '@keel/door/transcript'
import { shellMessage } from '@keel/door/shell-message'
import {
  compactionWords,
  hookWords,
  planDroppedWords,
  planEditWords,
  proposalWords,
  sentence,
  turnEndWords,
  type Words,
} from '@keel/door/words'
import type { SubagentPlan } from '@keel/subagent/plans'
import { openTasksNotice, parseTodoList, type Proposal, settlePlan, type TodoItem } from '@keel/todo/plan'
import type { DecisionView } from './permission.ts'
import { parseSubagentPlan, parseSubagentPlans } from './plan.ts'

export const PAGE_MESSAGES = 50
/** Live tool output kept per running call (the tail, where the news is). */
const MAX_LIVE_OUTPUT = 8 * 1024

interface ToolResultView {
  isError: boolean
  text: string
  /** The result's `details` (an edit's diff, a cancel), when the log has them. */
  details?: ToolResultDetails
}

export type TranscriptItem =
  | { kind: 'user'; key: string; seq: number; text: string; source: string; images?: string[] }
  | { kind: 'assistant'; key: string; seq: number; text: string; reasoning: string }
  | {
      kind: 'tool'
      key: string
      seq: number
      callId: string
      name: string
      arguments: string
      view?: CallView
      result?: ToolResultView
      run?: SubagentPlan
      /** Running, done, failed or cancelled: @keel/door's one rule. */
      status: ToolStatus
      /** @keel/permissions asked about this call; `decision` once it was decided (by a person, a rule or the mode). */
      asked?: boolean
      decision?: DecisionView
      /** What the hooks that ran for this call said (@keel/door's words, a sentence each). */
      hooks?: { text: string; tone: Words['tone'] }[]
    }
  | { kind: 'notice'; key: string; seq: number; text: string; tone: 'info' | 'error' }
  /** A plan proposal (plan mode), its card answered from the page while it is pending. */
  | { kind: 'proposal'; key: string; seq: number; proposal: Proposal; text: string }

export type OpenState = 'idle' | 'loading' | 'open' | 'error'

export interface ConversationSnapshot {
  sessionId: string
  openState: OpenState
  openError: string | null
  items: readonly TranscriptItem[]
  /** The assistant text streaming in now (not yet a logged message). */
  partial: { text: string; reasoning: string } | null
  /** Live output of running tool calls, by call id. */
  outputs: Readonly<Record<string, string>>
  running: boolean
  hasMore: boolean
  loadingOlder: boolean
  olderError: string | null
  todos: readonly TodoItem[]
  /** Delegated tasks of the current turn by call id, from the host's `subagentPlans` projection (if it has one). */
  subagentPlans: Readonly<Record<string, SubagentPlan>>
  /** The host's model (from the tail page). */
  model: ModelInfo | null
  /** Token usage over the whole log: the tail page's figures plus the replies logged since. */
  usage: UsageSummary
  /** The running step's request waits to be retried (`model/retry`), until its reply or the turn's end. */
  retry: RetryNotice | null
  /** Permission asks waiting for an answer on this page: this session's and its subagents', oldest first. */
  asks: readonly PermissionAsk[]
  /** Background jobs running now, as far as the window shows (the fold's `jobs`). */
  jobs: readonly RunningJob[]
  /** Seqs of the window's first and last events (-1 when empty). */
  firstSeq: number
  lastSeq: number
}

export interface HistorySource {
  history(params: HistoryParams): Promise<HistoryPage>
}

const NO_TODOS: readonly TodoItem[] = Object.freeze([])
const NO_USAGE: UsageSummary = Object.freeze({})

/** Adds a reply's reported usage (the same rule as the host's usage.ts: input already counts cached tokens). */
export function foldUsage(usage: UsageSummary, entry: HistoryEntry): UsageSummary {
  const { event } = entry
  usage = foldCost(usage, event)
  if (event.type !== 'assistant/message' || !event.data.usage) return usage
  const used = event.data.usage.input + event.data.usage.output
  // An unknown total (a session the host read from its file) stays unknown rather than counting from here.
  return usage.total === undefined ? { context: used } : { ...usage, total: usage.total + used, context: used }
}

/** The session's dollars after one more event, by @keel/session/cost's sums (unknown stays unknown, as `total`). */
function foldCost(usage: UsageSummary, event: HistoryEntry['event']): UsageSummary {
  if (!usage.cost) return usage
  const data = event.data as { usage?: TokenUsage; costUsd?: number; cost?: CostTotal }
  const cost = { ...usage.cost }
  if ((event.type === 'assistant/message' || event.type === 'compaction/end') && data.usage)
    addRequest(cost, data.usage, data.costUsd)
  else if (event.type === 'subagent/end' && data.cost) addTotal(cost, data.cost)
  else return usage
  return { ...usage, cost }
}

/**
 * The standing plan after one more event, by @keel/todo's rule (`settlePlan`), with no plan as the empty list.
 * Returns `todos` itself for events that leave it alone. The list is checked: a malformed one reads as no plan.
 */
export function foldTodos(todos: readonly TodoItem[], entry: HistoryEntry): readonly TodoItem[] {
  const settled = settlePlan(entry.event)
  if (!settled) return todos
  if (settled.value === null) return todos.length ? NO_TODOS : todos
  return parseTodoList(settled.value) ?? NO_TODOS
}

/** The value a tail page seeds the plan with: its projection, and an absent one is the empty list. */
function seedTodos(page: HistoryPage): readonly TodoItem[] {
  const value = page.projections?.values.todos
  return (value === null || value === undefined ? null : parseTodoList(value)) ?? NO_TODOS
}

export class ConversationStore {
  private window: HistoryEntry[] = []
  /** The window folded by @keel/door's transcript fold; `items` are its entries as the page's rows. */
  private fold: TranscriptState = emptyTranscript()
  private items: TranscriptItem[] = []
  /** Each call's view (title) from the host, which the log does not hold. */
  private readonly views = new Map<string, CallView>()
  /** The row made of each fold entry: the fold replaces an entry that changes, so an unchanged row stays the same object. */
  private rows = new WeakMap<TranscriptEntry, TranscriptItem[]>()
  private todos: readonly TodoItem[] = NO_TODOS
  private plans: Record<string, SubagentPlan> = {}
  private plansSeq = -1
  private running = false
  private retry: RetryNotice | null = null
  private model: ModelInfo | null = null
  private usage: UsageSummary = NO_USAGE
  private partial: { text: string; reasoning: string } | null = null
  private outputs: Record<string, string> = {}
  private hasMore = false
  private openState: OpenState = 'idle'
  private openError: string | null = null
  private loadingOlder = false
  private olderError: string | null = null
  /** Live events that arrived while a tail page was on its way, or past a gap. */
  private buffered: HistoryEntry[] = []
  private pulling: Promise<void> | null = null
  private pullAgain = false
  /** The newest seq the host has told us exists (hello frames); a window ending before it is stale. */
  private knownSeq = -1
  /** Bumped by every tail install; an older page that answers after one is dropped. */
  private generation = 0
  private asks: PermissionAsk[] = []
  /** Asks that arrived while a tail page was on its way: the page may predate them. */
  private asksDuringPull: PermissionAsk[] = []
  /** Asks known to be over, so a tail page computed just before one ended cannot bring its card back. */
  private readonly settledAsks = new Set<string>()
  private snapshot: ConversationSnapshot
  private readonly listeners = new Set<() => void>()
  private readonly pageMessages: number

  constructor(
    readonly sessionId: string,
    private readonly source: HistorySource,
    options: { pageMessages?: number } = {},
  ) {
    this.pageMessages = options.pageMessages ?? PAGE_MESSAGES
    this.snapshot = this.build()
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  getSnapshot = (): ConversationSnapshot => this.snapshot

  /** Loads the tail page. */
  open(): Promise<void> {
    return this.pullTail()
  }

  /** Prepends the page before the window. The plan is left alone: it already reflects the whole log. */
  async loadOlder(): Promise<void> {
    if (!this.hasMore || this.loadingOlder || this.openState !== 'open' || !this.window.length) return
    const generation = this.generation
    const beforeSeq = this.window[0]!.event.seq
    this.loadingOlder = true
    this.olderError = null
    this.changed()
    try {
      const page = await this.source.history({ sessionId: this.sessionId, beforeSeq, maxMessages: this.pageMessages })
      if (generation !== this.generation) return
      const last = page.events[page.events.length - 1]
      if (last && last.event.seq + 1 !== beforeSeq) return // not adjacent to the window: keep what we have
      this.window = page.events.concat(this.window)
      this.hasMore = page.events.length ? page.hasMore : false
      this.rebuildItems()
    } catch (error) {
      this.olderError = messageOf(error)
    } finally {
      this.loadingOlder = false
      this.changed()
    }
  }

  /** Feeds one frame from the event stream; frames of other sessions are ignored. */
  accept(frame: ServerFrame): void {
    switch (frame.type) {
      case 'hello': {
        if (this.openState === 'error') void this.pullTail() // the stream is back: try the failed open again
        const mine = frame.sessions.find((s) => s.sessionId === this.sessionId)
        if (!mine) return
        this.knownSeq = Math.max(this.knownSeq, mine.lastSeq)
        if (this.openState === 'open' && this.lastSeq() < this.knownSeq) void this.pullTail()
        return
      }
      case 'session/event': {
        if (frame.sessionId !== this.sessionId) return
        const entry: HistoryEntry = frame.view ? { event: frame.event, view: frame.view } : { event: frame.event }
        if (this.pulling) {
          this.buffered.push(entry)
          return
        }
        if (this.openState !== 'open') return // not opened, or the open failed: the next open pulls the tail anyway
        const seq = entry.event.seq
        if (seq <= this.lastSeq()) return
        if (seq > this.lastSeq() + 1) {
          // Missed events (a dropped connection, a slow tab): the tail page is the repair.
          this.buffered.push(entry)
          void this.pullTail()
          return
        }
        this.applyLive(entry)
        this.changed()
        return
      }
      case 'agent/delta': {
        if (frame.sessionId !== this.sessionId || this.openState !== 'open') return
        const { delta } = frame
        if (delta.kind === 'text' || delta.kind === 'reasoning') {
          const partial = this.partial ?? { text: '', reasoning: '' }
          this.partial =
            delta.kind === 'text'
              ? { ...partial, text: partial.text + delta.text }
              : { ...partial, reasoning: partial.reasoning + delta.text }
        } else if (delta.kind === 'tool-output') {
          this.outputs = {
            ...this.outputs,
            [delta.callId]: ((this.outputs[delta.callId] ?? '') + delta.text).slice(-MAX_LIVE_OUTPUT),
          }
        } else {
          return
        }
        this.changed()
        return
      }
      case 'permission/ask': {
        if (frame.sessionId !== this.sessionId || this.settledAsks.has(askKey(frame.ask.sessionId, frame.ask.callId)))
          return
        if (this.pulling) this.asksDuringPull.push(frame.ask)
        this.addAsk(frame.ask)
        this.changed()
        return
      }
      case 'permission/settled': {
        if (frame.sessionId !== this.sessionId) return
        if (this.settleAsk(frame.askSessionId, frame.callId)) this.changed()
        return
      }
      case 'session/projection': {
        if (frame.sessionId !== this.sessionId || frame.key !== 'subagentPlans' || frame.seq < this.plansSeq) return
        this.plans = parseSubagentPlans(frame.value)
        this.plansSeq = frame.seq
        this.changed()
        return
      }
      default:
        return
    }
  }

  private lastSeq(): number {
    return this.window.length ? this.window[this.window.length - 1]!.event.seq : -1
  }

  private pullTail(): Promise<void> {
    if (this.pulling) {
      this.pullAgain = true
      return this.pulling
    }
    if (this.openState !== 'open') this.openState = 'loading'
    this.changed()
    this.pulling = (async () => {
      try {
        do {
          this.pullAgain = false
          const page = await this.source.history({ sessionId: this.sessionId, maxMessages: this.pageMessages })
          this.install(page)
        } while (this.pullAgain)
      } catch (error) {
        // An open window stays usable; the next gap or hello tries again.
        if (this.openState !== 'open') {
          this.openState = 'error'
          this.openError = messageOf(error)
        }
      } finally {
        this.pulling = null
        this.asksDuringPull = []
        this.changed()
      }
    })()
    return this.pulling
  }

  /** Replaces the window with a tail page, seeds the derived state from it, then stitches buffered live events on. */
  private install(page: HistoryPage): void {
    this.generation++
    this.window = page.events.slice()
    this.hasMore = page.hasMore
    this.todos = seedTodos(page)
    const asOf = page.projections?.asOfSeq ?? this.lastSeq()
    if (asOf >= this.plansSeq) {
      this.plans = parseSubagentPlans(page.projections?.values.subagentPlans)
      this.plansSeq = asOf
    }
    let running = false
    for (const entry of this.window) {
      // A plan written or cleared inside the window is determined by it; the fold agrees with the seed.
      this.todos = foldTodos(this.todos, entry)
      if (entry.event.type === 'turn/start') running = true
      else if (entry.event.type === 'turn/end') running = false
    }
    this.running = page.running ?? running
    if (page.model) this.model = page.model
    this.usage = page.usage ?? NO_USAGE
    this.asks = []
    for (const ask of [...(page.asks ?? []), ...this.asksDuringPull]) {
      if (!this.settledAsks.has(askKey(ask.sessionId, ask.callId))) this.addAsk(ask)
    }
    this.partial = null
    this.outputs = {}
    this.rebuildItems()
    this.openState = 'open'
    this.openError = null
    const pending = this.buffered.sort((a, b) => a.event.seq - b.event.seq)
    this.buffered = []
    for (const [i, entry] of pending.entries()) {
      const seq = entry.event.seq
      if (seq <= this.lastSeq()) continue
      if (seq > this.lastSeq() + 1) {
        this.buffered = pending.slice(i)
        this.pullAgain = true
        return
      }
      this.applyLive(entry)
    }
    if (this.lastSeq() < this.knownSeq) this.pullAgain = true
  }

  private applyLive(entry: HistoryEntry): void {
    this.window.push(entry)
    this.applyItem(entry)
    this.todos = foldTodos(this.todos, entry)
    this.usage = foldUsage(this.usage, entry)
    const { event } = entry
    if (event.type === 'model/retry') this.retry = event.data as RetryNotice
    else if (event.type === 'assistant/message' || event.type === 'turn/end' || event.type === 'step/start')
      this.retry = null
    if (event.type === 'turn/start') this.running = true
    else if (event.type === 'turn/end') {
      this.running = false
      this.partial = null
    } else if (event.type === 'assistant/message') {
      this.partial = null
    } else if (event.type === 'permission/decision') {
      this.settleAsk(this.sessionId, event.data.callId)
    } else if (event.type === 'tool/result' && this.outputs[event.data.callId] !== undefined) {
      const { [event.data.callId]: _done, ...rest } = this.outputs
      this.outputs = rest
    }
  }

  private rebuildItems(): void {
    this.fold = emptyTranscript()
    this.views.clear()
    this.rows = new WeakMap()
    for (const entry of this.window) this.foldEntry(entry)
    this.items = this.fold.entries.flatMap((entry) => this.rowsOf(entry))
  }

  private applyItem(entry: HistoryEntry): void {
    this.foldEntry(entry)
    this.items = this.fold.entries.flatMap((entry) => this.rowsOf(entry))
  }

  private foldEntry(entry: HistoryEntry): void {
    const { event } = entry
    if (event.type === 'tool/call' && entry.view) this.views.set(String(event.data.callId), entry.view)
    foldEvent(this.fold, event as SessionEvent)
  }

  private rowsOf(entry: TranscriptEntry): TranscriptItem[] {
    let rows = this.rows.get(entry)
    if (!rows) {
      rows = itemsOf(entry, this.views)
      this.rows.set(entry, rows)
    }
    return rows
  }

  private addAsk(ask: PermissionAsk): void {
    const key = askKey(ask.sessionId, ask.callId)
    if (!this.asks.some((known) => askKey(known.sessionId, known.callId) === key)) this.asks = [...this.asks, ask]
  }

  /** Drops an ask's card for good; true when one was shown. */
  private settleAsk(sessionId: string, callId: string): boolean {
    const key = askKey(sessionId, callId)
    this.settledAsks.add(key)
    if (this.settledAsks.size > 1000) this.settledAsks.delete(this.settledAsks.values().next().value!)
    const before = this.asks.length
    this.asks = this.asks.filter((ask) => askKey(ask.sessionId, ask.callId) !== key)
    return this.asks.length !== before
  }

  /** After a tab's own answer was refused (someone else decided first): the card goes. */
  dropAsk(sessionId: string, callId: string): void {
    if (this.settleAsk(sessionId, callId)) this.changed()
  }

  private changed(): void {
    this.snapshot = this.build()
    for (const listener of [...this.listeners]) listener()
  }

  private build(): ConversationSnapshot {
    return Object.freeze({
      sessionId: this.sessionId,
      openState: this.openState,
      openError: this.openError,
      items: this.items.slice(),
      partial: this.partial,
      outputs: this.outputs,
      running: this.running,
      hasMore: this.hasMore,
      loadingOlder: this.loadingOlder,
      olderError: this.olderError,
      todos: this.todos,
      subagentPlans: this.plans,
      model: this.model,
      usage: this.usage,
      retry: this.retry,
      asks: this.asks,
      jobs: this.fold.jobs,
      firstSeq: this.window.length ? this.window[0]!.event.seq : -1,
      lastSeq: this.lastSeq(),
    })
  }
}

function askKey(sessionId: string, callId: string): string {
  return `${sessionId}\u0000${callId}`
}

/** A fold entry as the page's rows; the words are @keel/door's, in the page's style (a sentence each). */
function itemsOf(entry: TranscriptEntry, views: ReadonlyMap<string, CallView>): TranscriptItem[] {
  const key = `e${entry.seq}`
  const { seq } = entry
  switch (entry.kind) {
    case 'user':
      return [
        {
          kind: 'user',
          key,
          seq,
          text: entry.text,
          source: 'user',
          ...(entry.images ? { images: entry.images.map(imageLabel) } : {}),
        },
      ]
    case 'context':
      return [{ kind: 'user', key, seq, text: entry.text, source: entry.source }]
    case 'shell': {
      // The page shows the message the model read; the fold parsed it, and a text it could not parse is its output.
      const text = entry.command ? shellMessage(entry.command, entry.output) : entry.output
      return [{ kind: 'user', key, seq, text, source: 'shell' }]
    }
    case 'assistant':
      return [{ kind: 'assistant', key, seq, text: entry.text, reasoning: entry.reasoning }]
    case 'tool': {
      const view = views.get(entry.callId)
      const run = entry.run ? parseSubagentPlan(entry.run) : undefined
      return [
        {
          kind: 'tool',
          key,
          seq,
          callId: entry.callId,
          name: entry.name,
          arguments: entry.arguments,
          status: entry.status,
          ...(view ? { view } : {}),
          ...(entry.status === 'running'
            ? {}
            : {
                result: {
                  isError: entry.status !== 'done',
                  text: entry.output,
                  ...(entry.details ? { details: entry.details } : {}),
                },
              }),
          ...(run ? { run } : {}),
          ...(entry.asked !== undefined ? { asked: true } : {}),
          ...(entry.decision ? { decision: entry.decision } : {}),
          ...(entry.hooks?.length ? { hooks: hookLines(entry.hooks) } : {}),
        },
      ]
    }
    case 'hook': {
      const words = hookWords(entry.run)
      return words ? [notice(key, seq, words)] : []
    }
    case 'turn-end': {
      const words = turnEndWords(entry.reason, entry.message)
      return words ? [notice(key, seq, words)] : []
    }
    case 'plan-open':
      return [{ ...notice(`${key}-open`, seq, { text: openTasksNotice(entry.open).text, tone: 'info' }) }]
    case 'compaction':
      return [notice(key, seq, compactionWords(entry))]
    case 'rewind':
      // The rewind card shows what a rewind did when it happens; the log's record of it is not a row yet.
      return []
    case 'proposal': {
      const { kind: _, ...proposal } = entry
      return [{ kind: 'proposal', key, seq, proposal, text: sentence(proposalWords(entry).text) }]
    }
    case 'plan-edit':
      return [notice(key, seq, planEditWords(entry.change))]
    case 'plan-dropped':
      return [notice(key, seq, planDroppedWords(entry.items))]
  }
}

function hookLines(runs: Parameters<typeof hookWords>[0][]): { text: string; tone: Words['tone'] }[] {
  return runs.flatMap((run) => {
    const words = hookWords(run)
    return words ? [{ text: sentence(words.text), tone: words.tone }] : []
  })
}

function notice(key: string, seq: number, words: Words): TranscriptItem {
  return { kind: 'notice', key, seq, text: sentence(words.text), tone: words.tone === 'error' ? 'error' : 'info' }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
