import { Context, Service } from 'cordis'
import { backscan } from './backscan.ts'
import type { Session } from './session.ts'
import type { SessionEvent } from './types.ts'

/** Merge-extensible map of projection key → state type: `declare module '@keel/session' { interface ProjectionMap {…} }`. */
export interface ProjectionMap {}

export type ProjectionKey = keyof ProjectionMap & string

export interface ProjectionDefinition<K extends ProjectionKey = ProjectionKey> {
  key: K
  /** Bump when the state shape changes; two registrations of one key must agree. */
  version: number
  init(): ProjectionMap[K]
  /** Pure and synchronous; returns the same reference for events it ignores. */
  apply(state: ProjectionMap[K], event: SessionEvent): ProjectionMap[K]
  /**
   * Optional backwards rule for cold readers: given events from the newest back, return `{ value }` at the first
   * event that settles the state. Lets a host answer from a file's tail without folding the whole log.
   */
  settle?(event: SessionEvent): { value: ProjectionMap[K] } | undefined
}

export interface ProjectionSnapshot {
  /** Seq of the last event every value reflects (-1 for an empty log). */
  asOfSeq: number
  values: Partial<ProjectionMap>
}

export type ProjectionListener = (session: Session, key: ProjectionKey, value: unknown, seq: number) => void

interface Cell { state: unknown; seq: number }
interface Registered { definition: ProjectionDefinition; refs: number }

/** `ctx.projections`: folds registered units over each session's log, lazily at first touch, then per event. */
export class Projections extends Service {
  private readonly units = new Map<string, Registered>()
  private readonly cells = new WeakMap<Session, Map<string, Cell>>()
  private readonly listeners = new Set<ProjectionListener>()

  constructor(ctx: Context) {
    super(ctx, 'projections', true)
    ctx.on('session/event', (session, event) => this.advance(session, event))
  }

  register<K extends ProjectionKey>(definition: ProjectionDefinition<K>): () => void {
    return this.ctx.effect(() => {
      const existing = this.units.get(definition.key)
      if (existing) {
        if (existing.definition.version !== definition.version) {
          throw new Error(`projection ${definition.key} registered with version ${definition.version}, but version ${existing.definition.version} is live`)
        }
        existing.refs++
      } else {
        this.units.set(definition.key, { definition: definition as unknown as ProjectionDefinition, refs: 1 })
      }
      return () => {
        const unit = this.units.get(definition.key)
        if (unit && --unit.refs === 0) this.units.delete(definition.key)
      }
    })
  }

  has(key: string): boolean {
    return this.units.has(key)
  }

  keys(): string[] {
    return [...this.units.keys()]
  }

  get<K extends ProjectionKey>(session: Session, key: K): ProjectionMap[K] | undefined {
    const unit = this.units.get(key)
    if (!unit) return undefined
    return this.cell(session, unit.definition).state as ProjectionMap[K]
  }

  snapshot(session: Session): ProjectionSnapshot {
    const values: Record<string, unknown> = {}
    for (const [key, unit] of this.units) values[key] = this.cell(session, unit.definition).state
    return { asOfSeq: session.seq - 1, values: values as Partial<ProjectionMap> }
  }

  /** The same values computed from a session file by reading backwards; units without a `settle` rule fold in full. */
  snapshotFromFile(path: string, lastSeq: number): ProjectionSnapshot {
    const values: Record<string, unknown> = {}
    for (const [key, { definition }] of this.units) {
      if (!definition.settle) continue
      const found = backscan(path, (event) => definition.settle!(event))
      values[key] = found.value ? found.value.value : definition.init()
    }
    return { asOfSeq: lastSeq, values: values as Partial<ProjectionMap> }
  }

  onChanged(listener: ProjectionListener): () => void {
    return this.ctx.effect(() => {
      this.listeners.add(listener)
      return () => this.listeners.delete(listener)
    })
  }

  private cell(session: Session, definition: ProjectionDefinition): Cell {
    let cells = this.cells.get(session)
    if (!cells) this.cells.set(session, (cells = new Map()))
    let cell = cells.get(definition.key)
    if (!cell) {
      let state = definition.init()
      for (const event of session.events) state = definition.apply(state, event)
      cell = { state, seq: session.seq - 1 }
      cells.set(definition.key, cell)
    }
    return cell
  }

  private advance(session: Session, event: SessionEvent): void {
    for (const { definition } of this.units.values()) {
      const cells = this.cells.get(session)
      const existing = cells?.get(definition.key)
      if (!existing) {
        // First touch folds the whole log, this event included.
        const cell = this.cell(session, definition)
        if (cell.state !== definition.init()) this.notify(session, definition.key, cell.state, event.seq)
        continue
      }
      if (existing.seq >= event.seq) continue
      const next = definition.apply(existing.state as never, event)
      existing.seq = event.seq
      if (Object.is(next, existing.state)) continue
      existing.state = next
      this.notify(session, definition.key, next, event.seq)
    }
  }

  private notify(session: Session, key: string, value: unknown, seq: number): void {
    for (const listener of this.listeners) {
      try { listener(session, key as ProjectionKey, value, seq) } catch {}
    }
  }
}

declare module 'cordis' {
  interface Context {
    projections: Projections
  }
}
