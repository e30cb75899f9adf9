import { deepFreezeParsed, frozenJsonCopy } from './json.ts'
import type { Message } from './messages.ts'
import { checkSurfaceMetadata, Surface, type Span } from './surface.ts'
import type {
  AppendOptions,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SessionHeader,
  SurfaceIntent,
} from './types.ts'

export interface SessionHooks {
  /** Runs before the event commits; a throw vetoes the append. */
  beforeCommit?(session: Session, event: SessionEvent): void
  /**
   * Writes the event durably, after validation and before it joins the in-memory log. A throw fails the append and
   * leaves the log unchanged, so memory and disk never disagree about which events exist.
   */
  persist?(session: Session, event: SessionEvent): void
  /** Makes the durability points that `together()` put off durable; a throw fails the batch (see `together`). */
  settle?(session: Session): void
  /** Runs after the event commits (listeners). */
  afterCommit?(session: Session, event: SessionEvent): void
}

export class SeedError extends Error {
  /** Seq of the seed event that was refused, when one was. */
  readonly seq?: number
  constructor(message: string, seq?: number) {
    super(message)
    this.name = 'SeedError'
    if (seq !== undefined) this.seq = seq
  }
}

/**
 * An append-only, in-memory event log. `seq` equals the index; every appended event is a frozen, JSON-clean
 * copy. Persistence and notification are hooks, so a detached session (tests, tools) needs no store.
 */
export class Session {
  private readonly log: SessionEvent[] = []
  /** How deep in `together()` calls this session is. */
  private held = 0
  private readonly surface = new Surface()
  private frozenView: readonly SessionEvent[] | undefined
  private appending = false
  hooks: SessionHooks

  /**
   * `seed` is checked (contiguous seqs, surface metadata) and copied. With `adoptSeed`, the seed events are taken
   * over instead of copied: frozen in place, which is only right for objects fresh from `JSON.parse` that the caller
   * hands over (the store does this when it loads a file).
   */
  constructor(
    readonly header: SessionHeader,
    seed: readonly SessionEvent[] = [],
    hooks: SessionHooks = {},
    options: { adoptSeed?: boolean } = {},
  ) {
    this.hooks = {}
    for (const event of seed) {
      const seq = this.log.length
      if (event.seq !== seq)
        throw new SeedError(`seed must be contiguous from 0: expected seq ${seq}, got ${event.seq}`, seq)
      let frozen: SessionEvent
      try {
        checkSurfaceMetadata(event.type, seq, event as unknown as Partial<SurfaceIntent>, this.surface)
        frozen = options.adoptSeed ? deepFreezeParsed(event) : frozenJsonCopy(event, `event ${seq}`)
      } catch (error) {
        throw new SeedError(`seed event ${seq} (${event.type}): ${(error as Error).message}`, seq)
      }
      this.log.push(frozen)
      this.surface.add(frozen)
    }
    this.hooks = hooks
  }

  get id(): string {
    return this.header.id
  }

  /** The next seq to be assigned (the log length). */
  get seq(): number {
    return this.log.length
  }

  /** A frozen snapshot of the log, reused until the next append. */
  get events(): readonly SessionEvent[] {
    return (this.frozenView ??= Object.freeze(this.log.slice()))
  }

  get last(): SessionEvent | undefined {
    return this.log[this.log.length - 1]
  }

  at(seq: number): SessionEvent | undefined {
    return this.log[seq]
  }

  append<K extends SessionEventType>(type: K, data: SessionEventMap[K], ...options: AppendOptions<K>): SessionEvent<K> {
    if (this.appending) throw new Error(`re-entrant append of ${type} while another event is being published`)
    const intent = options[0] as SurfaceIntent | undefined
    const seq = this.log.length
    checkSurfaceMetadata(type, seq, intent, this.surface)
    const draft: Record<string, unknown> = { type, seq, time: Date.now(), data }
    if (intent) {
      draft.surfaceOp = intent.surfaceOp
      if (intent.sourceEventSeqs) draft.sourceEventSeqs = intent.sourceEventSeqs
    }
    const event = frozenJsonCopy(draft, type) as unknown as SessionEvent
    this.appending = true
    try {
      this.hooks.beforeCommit?.(this, event)
      this.hooks.persist?.(this, event)
      this.log.push(event)
      this.frozenView = undefined
      this.surface.add(event)
      this.hooks.afterCommit?.(this, event)
    } finally {
      this.appending = false
    }
    return event as SessionEvent<K>
  }

  /** Provider-neutral history: only surface events, folded once each (see Surface). */
  /**
   * Runs appends that belong together (the results of one batch of tool calls, all of them finished) with one
   * durability point at the end instead of one per durable event. Nothing outside the log happens between them, so
   * a crash in the middle loses no more than a crash just before the first of them would: the calls are answered
   * as interrupted either way. When `appends` returns, all of it is as durable as one `append` of a durable type.
   */
  together<T>(appends: () => T): T {
    this.held++
    let out: T
    try {
      out = appends()
    } catch (error) {
      if (--this.held === 0)
        try {
          this.hooks.settle?.(this)
        } catch {} // the batch's own error is the one to report
      throw error
    }
    if (--this.held === 0) this.hooks.settle?.(this)
    return out
  }

  /** Whether an append now is inside `together()`: its durability point may wait for the end of the batch. */
  get holding(): boolean {
    return this.held > 0
  }

  deriveMessages(): Message[] {
    return this.surface.messages()
  }

  /** How many surface events have been folded in total; tests use it to prove caching. */
  get surfaceFolds(): number {
    return this.surface.folds
  }

  /** Seqs of the model-visible surface nodes, in order. */
  get surfaceNodes(): readonly number[] {
    return this.surface.nodes
  }

  /** What each surface node stands for, parallel to `surfaceNodes` (see `Span`): a replace covers a node by its span. */
  get surfaceSpans(): readonly Span[] {
    return this.surface.spans
  }
}
