import { backscan, type BackscanResult, type SessionEvent } from '@keel/session'
import { settlePlan, type TodoItem } from '@keel/todo'

/** Event types a page may start at: the openers of a turn or step, and whole messages. */
const PAGE_STARTS: ReadonlySet<string> = new Set(['turn/start', 'step/start', 'user/message', 'assistant/message'])
const MESSAGES: ReadonlySet<string> = new Set(['user/message', 'assistant/message'])
/** Openers that directly precede a page start are pulled into the page, so it begins with its turn or step. */
const OPENERS: ReadonlySet<string> = new Set(['turn/start', 'step/start'])

/** Past this many events a page ends at the next clean start even when it holds fewer messages (tool-heavy logs). */
export const MAX_PAGE_EVENTS = 5000

export class PageRequestError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PageRequestError'
  }
}

export interface Page {
  /** In seq order. */
  events: SessionEvent[]
  hasMore: boolean
}

/**
 * Decides where a history page starts while being fed a log newest-first. A clean start is a page-start event at
 * which no tool call is split from its result (no result at or after it belongs to a call before it). The page ends
 * at the first clean start that completes `maxMessages` messages (or `MAX_PAGE_EVENTS` events), plus any turn/step
 * openers right before it.
 *
 * Events at or after `beforeSeq` are only tracked: `beforeSeq` itself must be a clean start (the first seq of a page
 * the client already holds), or the request is refused rather than answered with a split page.
 */
export class PageCutter {
  /** Call ids of results already seen whose `tool/call` lies further back. */
  private readonly unmatched = new Set<string>()
  private messages = 0
  private closing = false
  private nextNewer: SessionEvent | undefined
  /** Newest first. */
  private readonly collected: SessionEvent[] = []
  private previousSeq: number | undefined

  constructor(
    readonly beforeSeq: number | undefined,
    readonly maxMessages: number,
  ) {}

  /** Feeds the next older event; true once the page is complete (the event that tells may not belong to it). */
  push(event: SessionEvent): boolean {
    if (this.previousSeq !== undefined && event.seq !== this.previousSeq - 1) {
      throw new Error(`session log is not contiguous: seq ${event.seq} precedes seq ${this.previousSeq}`)
    }
    this.previousSeq = event.seq
    if (this.beforeSeq !== undefined && event.seq >= this.beforeSeq) {
      this.track(event)
      this.nextNewer = event
      return false
    }
    if (
      this.beforeSeq !== undefined &&
      this.nextNewer &&
      this.nextNewer.seq === this.beforeSeq &&
      this.collected.length === 0
    ) {
      if (!this.clean(this.nextNewer)) {
        throw new PageRequestError(
          `beforeSeq ${this.beforeSeq} is not a page start (it would split a step); pass the first seq of a page you already have`,
        )
      }
    }
    if (this.closing) {
      if (!OPENERS.has(event.type)) return true
      this.collected.push(event)
      return false
    }
    this.collected.push(event)
    this.track(event)
    if (this.clean(event) && (this.messages >= this.maxMessages || this.collected.length >= MAX_PAGE_EVENTS))
      this.closing = true
    return false
  }

  page(): Page {
    const events = this.collected.slice().reverse()
    return { events, hasMore: events.length ? events[0]!.seq > 0 : false }
  }

  private track(event: SessionEvent): void {
    if (event.type === 'tool/result') this.unmatched.add(event.data.callId)
    else if (event.type === 'tool/call') this.unmatched.delete(event.data.callId)
    if (MESSAGES.has(event.type) && event.seq < (this.beforeSeq ?? Infinity)) this.messages++
  }

  private clean(event: SessionEvent): boolean {
    return PAGE_STARTS.has(event.type) && this.unmatched.size === 0
  }
}

export interface PageParams {
  beforeSeq?: number
  maxMessages: number
}

/** A page of an in-memory log (a session live in this process). */
export function pageOfEvents(events: readonly SessionEvent[], params: PageParams): Page {
  const cutter = new PageCutter(params.beforeSeq, params.maxMessages)
  for (let i = events.length - 1; i >= 0; i--) if (cutter.push(events[i]!)) break
  return cutter.page()
}

export interface FilePage extends Page {
  /** Seq of the file's last whole event (-1 when it has none). */
  lastSeq: number
  bytesRead: number
}

/** A stored log read from its end: a session file's path, or the store's own backscan (`ctx.sessions.backscan`). */
export type LogTail = string | (<T>(visit: (event: SessionEvent) => T | undefined) => BackscanResult<T>)

export function scanTail<T>(tail: LogTail, visit: (event: SessionEvent) => T | undefined): BackscanResult<T> {
  return typeof tail === 'string' ? backscan(tail, visit) : tail(visit)
}

/**
 * A page of a stored log, read backwards from its end (a file in blocks, see `backscan`; the database by key): the
 * tail page of a long log costs about the bytes of that page, not of the log. A torn last line is skipped.
 */
export function pageOfFile(tail: LogTail, params: PageParams): FilePage {
  const cutter = new PageCutter(params.beforeSeq, params.maxMessages)
  let lastSeq = -1
  const { bytesRead } = scanTail(tail, (event) => {
    if (lastSeq < 0) lastSeq = event.seq
    return cutter.push(event) ? true : undefined
  })
  return { ...cutter.page(), lastSeq, bytesRead }
}

/**
 * The standing plan as of `asOfSeq`: first from the page already in hand (newest first), else by reading the file
 * backwards to the latest `todo/write` or `turn/start` — never by folding the whole log.
 */
export function standingPlanOfFile(
  tail: LogTail,
  asOfSeq: number,
  page: readonly SessionEvent[],
): { todos: TodoItem[] | null; bytesRead: number } {
  for (let i = page.length - 1; i >= 0; i--) {
    const settled = settlePlan(page[i]!)
    if (settled) return { todos: settled.value, bytesRead: 0 }
  }
  const found = scanTail(tail, (event) => (event.seq > asOfSeq ? undefined : settlePlan(event)))
  return { todos: found.value ? found.value.value : null, bytesRead: found.bytesRead }
}
