import type { Context } from 'cordis'
import Schema from 'schemastery'
import { Projections } from './projections.ts'
import { keepNotices } from './notice.ts'
import { SessionStore } from './store.ts'

export * from './types.ts'
export * from './text.ts'
export * from './messages.ts'
export * from './json.ts'
export * from './session.ts'
export * from './surface.ts'
export * from './file.ts'
export { checkSessionEntry, ensureDirectory, MAX_SESSION_BYTES, notSessionFile, openSessionFile } from './regular.ts'
export * from './lock.ts'
export * from './paths.ts'
export * from './open-turns.ts'
export * from './backscan.ts'
export * from './backend.ts'
export { FileBackend } from './file-backend.ts'
export * from './store.ts'
export * from './projections.ts'
export * from './notice.ts'
export { Invariants, InvariantError, coreProblem, type InvariantCheck, type Trace } from './invariants.ts'

export const name = 'keel-session'
export type Config = {}
export const Config: Schema<Config> = Schema.object({})

/** Provides `ctx.sessions` (the log store) and `ctx.projections` (folds over it). */
export function apply(ctx: Context): void {
  keepNotices(ctx)
  ctx.plugin(SessionStore)
  ctx.plugin(Projections)
}
