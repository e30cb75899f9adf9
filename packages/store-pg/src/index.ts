import type { Context } from 'cordis'
import Schema from 'schemastery'
import { keepNotices, Projections, SessionStore } from '@keel/session'
import { PgBackend } from './backend.ts'
import type { SessionFeed } from './feed.ts'

export { hostName, PgBackend, SessionHeldError, SessionStoreError } from './backend.ts'
export type { FeedListener, SessionFeed, StoredAsk } from './feed.ts'
export {
  type AnswerFields,
  type ApprovalKey,
  answerProof,
  approvalKey,
  askDigest,
  provenAnswer,
} from './approval.ts'
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

/** The feed of a store other processes write to as well; undefined for the JSONL files. */
export function feedOf(sessions: SessionStore): SessionFeed | undefined {
  return sessions.backend instanceof PgBackend ? sessions.backend.feed() : undefined
}

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
