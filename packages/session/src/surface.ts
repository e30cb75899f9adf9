import type { Message } from './messages.ts'
import { SURFACE_EVENT_TYPES, type SessionEvent, type SurfaceOp } from './types.ts'

export class SurfaceError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SurfaceError'
  }
}

/**
 * The seqs a surface node stands for: its own for an appended message; for a replacement, the range it replaced (and
 * what the nodes it covered stood for). A replace covers a node whose span lies inside its range, so a summary can
 * be folded into a later one without the range reaching its own seq (which sits in the turn where it was made).
 */
export type Span = readonly [lo: number, hi: number]

/** What a replace range is checked against: the node seqs in surface order and their spans. */
export interface SurfaceView {
  readonly nodes: readonly number[]
  readonly spans: readonly Span[]
}

/** Throws unless surface metadata appears exactly on the surface types and is well formed. */
export function checkSurfaceMetadata(
  type: string,
  seq: number,
  intent: { surfaceOp?: SurfaceOp; sourceEventSeqs?: readonly number[] } | undefined,
  surface: SurfaceView,
): void {
  const { nodes, spans } = surface
  const isSurface = SURFACE_EVENT_TYPES.has(type)
  if (!isSurface) {
    if (intent && (intent.surfaceOp !== undefined || intent.sourceEventSeqs !== undefined)) {
      throw new SurfaceError(`${type} is not a surface event and must not carry surfaceOp or sourceEventSeqs`)
    }
    return
  }
  const op = intent?.surfaceOp
  if (!op || typeof op !== 'object') throw new SurfaceError(`${type} is a surface event and needs a surfaceOp`)
  if (op.op === 'replace') {
    if (!Number.isInteger(op.start) || !Number.isInteger(op.end) || op.start > op.end || op.end >= seq) {
      throw new SurfaceError(`${type} replace range [${op.start}, ${op.end}] is not a range of earlier events`)
    }
    const [first, count] = coveredRun(surface, op.start, op.end)
    if (count === 0) throw new SurfaceError(`${type} replace range [${op.start}, ${op.end}] covers no surface message`)
    for (let i = first + count; i < nodes.length; i++) {
      if (covers(surface, i, op.start, op.end)) {
        throw new SurfaceError(
          `${type} replace range [${op.start}, ${op.end}] covers surface messages that are not adjacent`,
        )
      }
    }
    for (let i = 0; i < nodes.length; i++) {
      const [lo, hi] = spans[i]!
      if ((i < first || i >= first + count) && lo <= op.end && hi >= op.start) {
        throw new SurfaceError(
          `${type} replace range [${op.start}, ${op.end}] splits what the replacement at seq ${nodes[i]} stands for ([${lo}, ${hi}])`,
        )
      }
    }
  } else if (op.op !== 'append') {
    throw new SurfaceError(`${type} has an unknown surfaceOp`)
  }
  for (const source of intent?.sourceEventSeqs ?? []) {
    if (!Number.isInteger(source) || source < 0 || source >= seq)
      throw new SurfaceError(`${type} cites seq ${source}, which is not an earlier event`)
  }
}

/**
 * A range covers a node whose span lies inside it, or whose own seq does: logs written before spans were tracked
 * name an earlier summary by its own seq.
 */
function covers(surface: SurfaceView, i: number, start: number, end: number): boolean {
  const node = surface.nodes[i]!
  const [lo, hi] = surface.spans[i]!
  return (lo >= start && hi <= end) || (node >= start && node <= end)
}

/**
 * Where the nodes covered by [start, end] begin in the surface and how many of them stand together there. Nodes are
 * in surface order, which is not seq order once a replace has put a newer node before older ones.
 */
function coveredRun(surface: SurfaceView, start: number, end: number): [first: number, count: number] {
  const { nodes } = surface
  let first = 0
  while (first < nodes.length && !covers(surface, first, start, end)) first++
  if (first === nodes.length) return [0, 0]
  let count = 1
  while (first + count < nodes.length && covers(surface, first + count, start, end)) count++
  return [first, count]
}

export function messageOf(event: SessionEvent): Message | null {
  switch (event.type) {
    case 'user/message':
      return event.data.message
    case 'assistant/message':
      return event.data.message.content.length ? event.data.message : null
    case 'tool/result':
      // Frozen like the event it comes from: the surface caches it and hands the same object out on every call.
      return Object.freeze({
        role: 'tool',
        content: Object.freeze([
          Object.freeze({
            type: 'tool-result',
            toolCallId: event.data.callId,
            content: event.data.content,
            isError: event.data.isError,
          }),
        ]),
      }) as Message
    default:
      return null
  }
}

/**
 * The ordered model-visible projection. Each surface event is folded once; `replace` splices the cache. The
 * `folds` counter exists so tests can prove a second `messages()` call does not re-fold old events.
 */
export class Surface implements SurfaceView {
  readonly nodes: number[] = []
  readonly spans: Span[] = []
  private readonly cache: (Message | null)[] = []
  private compact: Message[] = []
  private stale = false
  folds = 0

  add(event: SessionEvent): void {
    if (!SURFACE_EVENT_TYPES.has(event.type)) return
    this.folds++
    const message = messageOf(event)
    const op = (event as { surfaceOp: SurfaceOp }).surfaceOp
    if (op.op === 'append') {
      this.nodes.push(event.seq)
      this.spans.push([event.seq, event.seq])
      this.cache.push(message)
      if (message && !this.stale) this.compact.push(message)
      return
    }
    const [first, count] = coveredRun(this, op.start, op.end)
    let [lo, hi] = [op.start, op.end]
    for (const [coveredLo, coveredHi] of this.spans.slice(first, first + count)) {
      lo = Math.min(lo, coveredLo)
      hi = Math.max(hi, coveredHi)
    }
    this.nodes.splice(first, count, event.seq)
    this.spans.splice(first, count, [lo, hi])
    this.cache.splice(first, count, message)
    this.stale = true
  }

  /** A fresh array of the current messages (rebuilt only after a replace), every tool call paired with a result. */
  messages(): Message[] {
    if (this.stale) {
      this.compact = this.cache.filter((message): message is Message => message !== null)
      this.stale = false
    }
    return pairToolCalls(this.compact)
  }
}

export const UNANSWERED_RESULT =
  'Error: this tool call has no result on the log (the session was interrupted or its result could not be written); its outcome is unknown.'

/**
 * Strict providers refuse a tool call without a result right after it, and a result whose call is not right before it.
 * A log can hold either (a result that failed to reach the disk; a damaged or hand-edited file), so the history the
 * model sees is paired here, wherever in the log the gap is: each assistant message's calls are answered by the tool
 * messages that follow it, a missing answer becomes an error result, and a result answering no call there (or
 * answering one twice) is left out. A well-paired history comes back unchanged (same message objects).
 */
export function pairToolCalls(messages: readonly Message[]): Message[] {
  const out: Message[] = []
  let calls: string[] = []
  const answered = new Set<string>()
  const closeGroup = () => {
    for (const id of calls) {
      if (answered.has(id)) continue
      answered.add(id)
      out.push(
        Object.freeze({
          role: 'tool',
          content: Object.freeze([
            Object.freeze({
              type: 'tool-result',
              toolCallId: id,
              isError: true,
              content: Object.freeze([Object.freeze({ type: 'text', text: UNANSWERED_RESULT })]),
            }),
          ]),
        }) as Message,
      )
    }
    calls = []
    answered.clear()
  }
  for (const message of messages) {
    if (message.role === 'tool') {
      const kept = message.content.filter((block) => {
        if (!calls.includes(block.toolCallId) || answered.has(block.toolCallId)) return false
        answered.add(block.toolCallId)
        return true
      })
      if (kept.length === message.content.length) out.push(message)
      else if (kept.length) out.push(Object.freeze({ ...message, content: Object.freeze(kept) }) as Message)
      continue
    }
    closeGroup()
    if (message.role === 'assistant') {
      for (const block of message.content) if (block.type === 'tool-call') calls.push(block.id)
    }
    out.push(message)
  }
  closeGroup()
  return out
}
