import { type Context, Service } from 'cordis'
import { backscan } from './backscan.ts'
import { readSessionFile } from './file.ts'
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

interface Registered {
  definition: ProjectionDefinition
  refs: number
}
/** A unit's state for one session, valid for the registration it was folded by and up to `seq`. */
interface Cell {
  unit: Registered
  state: unknown
  seq: number
}

/**
 * `ctx.projections`: folds registered units over each session's log. Lazy: a unit's state for a session is folded
 * at first touch (`get`, `snapshot`, or the first event after someone listens with `onChanged`), then advanced one
 * event at a time.
 */
export class Projections extends Service {
  private readonly units = new Map<string, Registered>()
  private readonly cells = new WeakMap<Session, Map<string, Cell>>()
  private readonly listeners = new Set<ProjectionListener>()

  constructor(ctx: Context) {
    super(ctx, 'projections', true)
    ctx.on('session/event', (session, event) => this.advance(session, event))
  }

  /** An effect of the calling plugin: disposing it unregisters. Two registrations of one key share it and must agree on `version`. */
  register<K extends ProjectionKey>(definition: ProjectionDefinition<K>): () => void {
    return this.ctx.effect(() => {
      const existing = this.units.get(definition.key)
      if (existing) {
        if (existing.definition.version !== definition.version) {
          throw new Error(
            `projection ${definition.key} registered with version ${definition.version}, but version ${existing.definition.version} is live`,
          )
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
    return this.cell(session, unit).state as ProjectionMap[K]
  }

  snapshot(session: Session): ProjectionSnapshot {
    const values: Record<string, unknown> = {}
    for (const unit of this.units.values()) values[unit.definition.key] = this.cell(session, unit).state
    return { asOfSeq: session.seq - 1, values: values as Partial<ProjectionMap> }
  }

  /**
   * The same values computed from a session file: units with a `settle` rule read backwards from the end and stop
   * early; the others fold the whole file. Events after `lastSeq` (a file another process is still writing) are not
   * counted; without `lastSeq` the snapshot is as of the file's last whole event.
   */
  snapshotFromFile(path: string, lastSeq?: number): ProjectionSnapshot {
    const asOfSeq =
      lastSeq ?? backscan(path, (event) => (typeof event.seq === 'number' ? event.seq : undefined)).value ?? -1
    const values: Record<string, unknown> = {}
    let events: SessionEvent[] | undefined
    for (const { definition } of this.units.values()) {
      if (definition.settle) {
        const found = backscan(path, (event) => (event.seq > asOfSeq ? undefined : definition.settle!(event)))
        values[definition.key] = found.value ? found.value.value : definition.init()
      } else {
        events ??= readSessionFile(path).events
        let state = definition.init()
        for (const event of events) {
          if (event.seq > asOfSeq) break
          state = definition.apply(state, event)
        }
        values[definition.key] = state
      }
    }
    return { asOfSeq, values: values as Partial<ProjectionMap> }
  }

  /** An effect of the calling plugin. Called with the new value whenever a unit's state for a session changes. */
  onChanged(listener: ProjectionListener): () => void {
    return this.ctx.effect(() => {
      this.listeners.add(listener)
      return () => this.listeners.delete(listener)
    })
  }

  /** Folds the session's first `upTo` events (all of them by default). */
  private fold(session: Session, definition: ProjectionDefinition, upTo = session.seq): unknown {
    let state = definition.init()
    for (let seq = 0; seq < upTo; seq++) state = definition.apply(state as never, session.at(seq)!)
    return state
  }

  private cell(session: Session, unit: Registered): Cell {
    let cells = this.cells.get(session)
    if (!cells) this.cells.set(session, (cells = new Map()))
    let cell = cells.get(unit.definition.key)
    // A cell folded by an earlier registration of the key (since disposed, maybe with other code) is refolded.
    if (!cell || cell.unit !== unit) {
      cell = { unit, state: this.fold(session, unit.definition), seq: session.seq - 1 }
      cells.set(unit.definition.key, cell)
    }
    return cell
  }

  private advance(session: Session, event: SessionEvent): void {
    for (const unit of this.units.values()) {
      const { definition } = unit
      const cells = this.cells.get(session)
      let cell = cells?.get(definition.key)
      if (cell?.unit !== unit) cell = undefined
      try {
        if (!cell) {
          // Nobody has asked yet: stay lazy unless someone listens, then fold up to this event to see if it changes.
          if (!this.listeners.size) continue
          const before = this.fold(session, definition, event.seq)
          const after = definition.apply(before as never, event)
          this.cells.get(session) ?? this.cells.set(session, new Map())
          this.cells.get(session)!.set(definition.key, { unit, state: after, seq: event.seq })
          if (!Object.is(before, after)) this.notify(session, definition.key, after, event.seq)
          continue
        }
        if (cell.seq >= event.seq) continue
        const next = definition.apply(cell.state as never, event)
        cell.seq = event.seq
        if (Object.is(next, cell.state)) continue
        cell.state = next
        this.notify(session, definition.key, next, event.seq)
      } catch (error) {
        // A failing unit must not starve the others; its cell is dropped and refolded (and fails again) on next use.
        this.cells.get(session)?.delete(definition.key)
        this.ctx.emit(
          this.ctx,
          'internal/warning',
          `projection ${definition.key} failed at seq ${event.seq}: ${(error as Error)?.stack ?? error}`,
        )
      }
    }
  }

  private notify(session: Session, key: string, value: unknown, seq: number): void {
    for (const listener of this.listeners) {
      try {
        listener(session, key as ProjectionKey, value, seq)
      } catch (error) {
        this.ctx.emit(
          this.ctx,
          'internal/warning',
          `projection listener failed for ${key}: ${(error as Error)?.stack ?? error}`,
        )
      }
    }
  }
}

declare module 'cordis' {
  interface Context {
    projections: Projections
  }
}
