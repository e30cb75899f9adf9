import type { Context } from 'cordis'
import Schema from 'schemastery'
import { keepNotices, Projections, SessionStore } from '@keel/session'
import { PgBackend } from './backend.ts'

export { hostName, PgBackend, SessionHeldError, SessionStoreError } from './backend.ts'
export { SchemaError, SCHEMA_VERSION } from './schema.ts'
export { isPostgresUrl, redactUrl } from './url.ts'

export const name = 'keel-store-pg'

export interface Config {
  /** `postgres://user@host:port/database` (a password in it is never printed). */
  url: string
}
export const Config: Schema<Config> = Schema.object({
  url: Schema.string()
    .pattern(/^postgres(ql)?:\/\//i)
    .required(),
})

/** `ctx.sessions` over PostgreSQL: the SessionStore's rules, this package's backend. */
export class PgSessionStore extends SessionStore {
  constructor(ctx: Context, config: Config) {
    super(ctx, new PgBackend(config.url))
  }
}

/** Provides `ctx.sessions` (the log in PostgreSQL) and `ctx.projections`, in place of @keel/session's plugin. */
export function apply(ctx: Context, config: Config): void {
  keepNotices(ctx)
  ctx.plugin(PgSessionStore, config)
  ctx.plugin(Projections)
}
