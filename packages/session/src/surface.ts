import type { Message } from './messages.ts'
import { SURFACE_EVENT_TYPES, type SessionEvent, type SurfaceOp } from './types.ts'

export class SurfaceError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SurfaceError'
  }
}

/** Throws unless surface metadata appears exactly on the surface types and is well formed. */
export function checkSurfaceMetadata(type: string, seq: number, intent: { surfaceOp?: SurfaceOp; sourceEventSeqs?: readonly number[] } | undefined, nodes: readonly number[]): void {
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
    if (!nodes.some((node) => node >= op.start && node <= op.end)) {
      throw new SurfaceError(`${type} replace range [${op.start}, ${op.end}] covers no surface message`)
    }
  } else if (op.op !== 'append') {
    throw new SurfaceError(`${type} has an unknown surfaceOp`)
  }
  for (const source of intent?.sourceEventSeqs ?? []) {
    if (!Number.isInteger(source) || source < 0 || source >= seq) throw new SurfaceError(`${type} cites seq ${source}, which is not an earlier event`)
  }
}

export function messageOf(event: SessionEvent): Message | null {
  switch (event.type) {
    case 'user/message':
      return event.data.message
    case 'assistant/message':
      return event.data.message.content.length ? event.data.message : null
    case 'tool/result':
      return { role: 'tool', content: [{ type: 'tool-result', toolCallId: event.data.callId, content: [...event.data.content], isError: event.data.isError }] }
    default:
      return null
  }
}

/**
 * The ordered model-visible projection. Each surface event is folded once; `replace` splices the cache. The
 * `folds` counter exists so tests can prove a second `messages()` call does not re-fold old events.
 */
export class Surface {
  readonly nodes: number[] = []
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
      this.cache.push(message)
      if (message && !this.stale) this.compact.push(message)
      return
    }
    const first = this.nodes.findIndex((node) => node >= op.start && node <= op.end)
    let count = 0
    while (first + count < this.nodes.length && this.nodes[first + count]! <= op.end) count++
    this.nodes.splice(first, count, event.seq)
    this.cache.splice(first, count, message)
    this.stale = true
  }

  /** A fresh array of the current messages; rebuilt only after a replace. */
  messages(): Message[] {
    if (this.stale) {
      this.compact = this.cache.filter((message): message is Message => message !== null)
      this.stale = false
    }
    return this.compact.slice()
  }
}
