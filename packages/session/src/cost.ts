// Dollars from the log: the one place that prices a request, rolls a session's requests up (its own steps,
// compaction summaries, subagents) and words the figure. Types only from the rest of the package, nothing of
// node:, so the web client and every door import it as it is and only style what it says.
import type { TokenUsage } from './messages.ts'

/** US dollars per million tokens. A cache price left out is billed as plain input. */
export interface ModelPrice {
  input: number
  output: number
  cacheRead?: number
  cacheWrite?: number
}

/** Dollars of one request: the uncached part of the prompt, the cache reads and writes, the output, each at its price. */
export function requestCost(usage: TokenUsage, price: ModelPrice): number {
  const cacheRead = usage.cacheRead ?? 0
  const cacheWrite = usage.cacheWrite ?? 0
  const plain = Math.max(0, usage.input - cacheRead - cacheWrite)
  return (
    (plain * price.input +
      cacheRead * (price.cacheRead ?? price.input) +
      cacheWrite * (price.cacheWrite ?? price.input) +
      usage.output * price.output) /
    1_000_000
  )
}

/** What a set of requests cost. `unpriced` counts requests that reported usage for a model with no known price. */
export interface CostTotal {
  usd: number
  requests: number
  unpriced: number
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
}

export type CostSource = 'model' | 'compaction' | 'subagent'

/** One line of the breakdown: the session's own steps, its compaction summaries, or one subagent. */
export interface CostPart {
  source: CostSource
  /** The subagent's session id; absent for the session's own requests. */
  sessionId?: string
  total: CostTotal
}

export interface SessionCost {
  total: CostTotal
  parts: CostPart[]
}

export function emptyCost(): CostTotal {
  return { usd: 0, requests: 0, unpriced: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
}

/** Adds one request (its usage, and its dollars when the price was known) to `total`. */
export function addRequest(total: CostTotal, usage: TokenUsage, usd: number | undefined): void {
  total.requests++
  total.input += usage.input
  total.output += usage.output
  total.cacheRead += usage.cacheRead ?? 0
  total.cacheWrite += usage.cacheWrite ?? 0
  if (usd === undefined) total.unpriced++
  else total.usd += usd
}

export function addTotal(total: CostTotal, other: CostTotal): void {
  for (const key of Object.keys(total) as (keyof CostTotal)[]) total[key] += other[key]
}

/** The log events this reads, structurally (the compaction and subagent events are declared by their packages). */
interface CostEvent {
  type: string
  data: unknown
}
interface Priced {
  turn?: number
  usage?: TokenUsage
  costUsd?: number
  cost?: CostTotal
  sessionId?: string
}

/**
 * A session's cost from its log: every `assistant/message` and `compaction/end` that reported usage, and each
 * `subagent/end`'s rolled-up total, all of the session or only of `turn`. This is the function a budget reads.
 */
export function sessionCost(events: readonly CostEvent[], options: { turn?: number } = {}): SessionCost {
  const own = emptyCost()
  const compaction = emptyCost()
  const subagents: CostPart[] = []
  let turn: number | undefined
  for (const event of events) {
    const data = (event.data ?? {}) as Priced
    if (event.type === 'turn/start') turn = data.turn
    const here = typeof data.turn === 'number' ? data.turn : turn
    if (options.turn !== undefined && here !== options.turn) continue
    if (event.type === 'assistant/message' && data.usage) addRequest(own, data.usage, data.costUsd)
    else if (event.type === 'compaction/end' && data.usage) addRequest(compaction, data.usage, data.costUsd)
    else if (event.type === 'subagent/end' && data.cost)
      subagents.push({ source: 'subagent', sessionId: data.sessionId, total: { ...data.cost } })
  }
  const parts: CostPart[] = [{ source: 'model', total: own }]
  if (compaction.requests) parts.push({ source: 'compaction', total: compaction })
  parts.push(...subagents)
  const total = emptyCost()
  for (const part of parts) addTotal(total, part.total)
  return { total, parts }
}

/** Dollars as a person reads them: cents once it is a cent or more, four places below. */
export function dollars(usd: number): string {
  return usd >= 0.01 || usd === 0 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`
}

/**
 * The figure every door shows: `$0.42`, `cost unknown` when no request had a price (never `$0.00` for that), or
 * `$0.42 + 3 unpriced requests` when only some had.
 */
export function costText(total: CostTotal): string {
  if (!total.requests) return dollars(0)
  if (total.unpriced === total.requests) return 'cost unknown'
  const base = dollars(total.usd)
  return total.unpriced ? `${base} + ${total.unpriced} unpriced request${total.unpriced === 1 ? '' : 's'}` : base
}

/**
 * The figure for a status line or a list, where a free run (a scripted model) or one with no requests says
 * nothing: undefined then, else `costText`.
 */
export function costLabel(total: CostTotal): string | undefined {
  return total.requests && (total.usd > 0 || total.unpriced) ? costText(total) : undefined
}

/** The breakdown, one short line per part: `model $0.40 · compaction $0.01 · subagent 3f2a… $0.02`. */
export function costBreakdown(cost: SessionCost): string {
  return cost.parts
    .filter((part) => part.total.requests)
    .map((part) =>
      part.source === 'subagent'
        ? `subagent ${(part.sessionId ?? '').slice(0, 8)} ${costText(part.total)}`
        : `${part.source === 'model' ? 'model' : 'compaction'} ${costText(part.total)}`,
    )
    .join(' · ')
}

/** The `costUsd` of a JSON report: a number, or null when no request had a known price. */
export function costUsd(total: CostTotal): number | null {
  if (total.requests && total.unpriced === total.requests) return null
  return Math.round(total.usd * 1e6) / 1e6
}
