import type { ContentBlock } from '@keel/session'

/**
 * What a prompt sent while a turn runs becomes: `steer` is delivered to the running turn, after its running tool
 * calls finish and before its next model request; `follow-up` runs as the next turn once this one ends.
 */
export type QueueKind = 'steer' | 'follow-up'

export interface QueuedPrompt {
  /** Stable while queued, so a door can take it back or edit it: `q1`, `q2`, … per agent. */
  readonly id: string
  readonly kind: QueueKind
  readonly content: ContentBlock[]
}

/**
 * The one prompt queue of an agent, which every door uses (no door keeps its own). It lives in memory: what is
 * delivered lands on the log as a user message; what is still queued is shown live through `agent/queue`.
 */
export class PromptQueue {
  private items: QueuedPrompt[] = []
  private counter = 0

  constructor(private readonly changed: (items: readonly QueuedPrompt[]) => void) {}

  list(): readonly QueuedPrompt[] {
    return this.items
  }

  get size(): number {
    return this.items.length
  }

  has(kind: QueueKind): boolean {
    return this.items.some((item) => item.kind === kind)
  }

  add(kind: QueueKind, content: ContentBlock[]): QueuedPrompt {
    const item: QueuedPrompt = { id: `q${++this.counter}`, kind, content }
    this.items = [...this.items, item]
    this.changed(this.items)
    return item
  }

  /** Takes a queued prompt back before it is delivered; undefined when it is gone (delivered or removed). */
  remove(id: string): QueuedPrompt | undefined {
    const item = this.items.find((entry) => entry.id === id)
    if (!item) return undefined
    this.items = this.items.filter((entry) => entry !== item)
    this.changed(this.items)
    return item
  }

  /** Replaces a queued prompt's content (and kind) in place; false when it was already delivered or removed. */
  edit(id: string, content: ContentBlock[], kind?: QueueKind): boolean {
    const index = this.items.findIndex((entry) => entry.id === id)
    if (index < 0) return false
    const old = this.items[index]!
    this.items = this.items.map((entry, i) => (i === index ? { id: old.id, kind: kind ?? old.kind, content } : entry))
    this.changed(this.items)
    return true
  }

  /** Removes and returns every queued prompt of `kind`, oldest first. */
  take(kind: QueueKind): QueuedPrompt[] {
    const taken = this.items.filter((entry) => entry.kind === kind)
    if (!taken.length) return taken
    this.items = this.items.filter((entry) => entry.kind !== kind)
    this.changed(this.items)
    return taken
  }

  /** Removes and returns the oldest queued prompt of `kind`. */
  takeFirst(kind: QueueKind): QueuedPrompt | undefined {
    const item = this.items.find((entry) => entry.kind === kind)
    return item ? this.remove(item.id) : undefined
  }
}
