// Shared test scaffolding for @keel/session: a throwaway KEEL_HOME per test and a booted cordis context.
import { existsSync, mkdtempSync, rmSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import * as sessionPlugin from '@keel/session'
import * as devPlugin from '@keel/session/dev'
import {
  FileBackend,
  readLock,
  readSessionFile,
  type Session,
  type SessionEvent,
  type SessionHeader,
} from '@keel/session'
import * as pgPlugin from '@keel/store-pg'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'

/** Points KEEL_HOME at a fresh temp dir before each test and removes it after. Returns a getter for the dir. */
export function useTempHome(): () => string {
  let home = ''
  const previous = process.env.KEEL_HOME
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'keel-session-test-'))
    process.env.KEEL_HOME = home
  })
  afterEach(() => {
    if (previous === undefined) delete process.env.KEEL_HOME
    else process.env.KEEL_HOME = previous
    rmSync(home, { recursive: true, force: true })
  })
  return () => home
}

/** A started root context with `@keel/session` and, unless `dev: false`, the dev-mode invariants. */
export async function boot(options: { dev?: boolean } = {}): Promise<Context> {
  const ctx = new Context()
  // Keep cordis from printing expected listener failures; tests that care listen themselves.
  ctx.on('internal/warning', () => {})
  ctx.plugin(sessionPlugin)
  if (options.dev !== false) ctx.plugin(devPlugin)
  await ctx.start()
  return ctx
}

export function header(id = 'test-session'): SessionHeader {
  return { type: 'session', version: 1, id, createdAt: 0, cwd: '/tmp/project' }
}

/** Appends one well-formed turn: a prompt, an answer with one tool call, its result, and a final answer. */
export function appendTurn(session: Session, turn: number, options: { prompt?: string; callId?: string } = {}): void {
  const callId = options.callId ?? `call-${turn}`
  session.append('turn/start', { turn, trigger: 'prompt' })
  session.append('step/start', { turn, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: options.prompt ?? `prompt ${turn}` }] } },
    { surfaceOp: { op: 'append' } },
  )
  session.append(
    'assistant/message',
    {
      turn,
      step: 1,
      message: {
        role: 'assistant',
        content: [{ type: 'tool-call', id: callId, name: 'bash', arguments: '{"command":"ls"}' }],
      },
    },
    { surfaceOp: { op: 'append' } },
  )
  session.append('tool/call', { turn, step: 1, callId, name: 'bash', arguments: '{"command":"ls"}' })
  session.append(
    'tool/result',
    { turn, step: 1, callId, content: [{ type: 'text', text: 'a\nb' }], isError: false },
    { surfaceOp: { op: 'append' } },
  )
  session.append('step/end', { turn, step: 1 })
  session.append('step/start', { turn, step: 2 })
  session.append(
    'assistant/message',
    { turn, step: 2, message: { role: 'assistant', content: [{ type: 'text', text: `done ${turn}` }] } },
    { surfaceOp: { op: 'append' } },
  )
  session.append('step/end', { turn, step: 2 })
  session.append('turn/end', { turn, reason: 'completed' })
}

// A test-only extension event, merged the way packages add theirs (`todo/write` in @keel/todo).
declare module '@keel/session' {
  interface SessionEventMap {
    'test/note': { text: string }
  }
}

/** How a lock's "since" appears in SessionLockedError: `2026-11-30 20:15:03 UTC`, read from the lock of `path`. */
export function lockSince(path: string): string {
  return new Date(readLock(path + '.lock')!.since!).toISOString().replace('T', ' ').slice(0, 19) + ' UTC'
}

/**
 * The stores the contract tests run against: the JSONL files and PostgreSQL (@keel/store-pg, on a throwaway server
 * that `useStores()` starts for the test file). Each kind boots a context and says what its log holds, whether a
 * writer lock is held, and how to age a session, so one test body checks both.
 */
export interface StoreKind {
  name: 'jsonl' | 'postgres'
  /** True when this kind cannot run here (PostgreSQL missing outside CI): its tests skip. */
  skip: boolean
  boot(options?: { dev?: boolean }): Promise<Context>
  /** The events as a plain read of the stored log sees them. */
  stored(ctx: Context, id: string): Promise<SessionEvent[]>
  /** Whether a writer lock on the session is held by anyone. */
  locked(ctx: Context, id: string): Promise<boolean>
  /** Sets when the session was last written (seconds since the epoch). */
  touch(ctx: Context, id: string, seconds: number): Promise<void>
  /** What a child process's environment needs to open this store (tests/fixtures/writer.ts reads KEEL_STORE). */
  env(): Record<string, string>
}

export function useStores(): StoreKind[] {
  let server: PostgresServer | undefined
  let client: pg.Client | undefined
  const skipPg = skipWithout('postgresql', HAS_POSTGRES, 'the PostgreSQL session store')
  beforeAll(async () => {
    if (skipPg) return
    server = await startPostgres()
    client = new pg.Client({ connectionString: server.url })
    await client.connect()
  }, 60_000)
  afterAll(async () => {
    await client?.end()
    server?.destroy()
  })
  afterEach(async () => {
    // Each test starts from an empty store, as each starts from an empty KEEL_HOME.
    if (client) await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public')
  })
  const jsonl: StoreKind = {
    name: 'jsonl',
    skip: false,
    boot,
    async stored(ctx, id) {
      return readSessionFile(ctx.sessions.pathOf(id)!).events
    },
    async locked(_ctx, id) {
      return existsSync(new FileBackend().locate(id) + '.lock')
    },
    async touch(ctx, id, seconds) {
      utimesSync(ctx.sessions.pathOf(id)!, seconds, seconds)
    },
    env: () => ({}),
  }
  const postgres: StoreKind = {
    name: 'postgres',
    skip: skipPg,
    async boot(options = {}) {
      const ctx = new Context()
      ctx.on('internal/warning', () => {})
      ctx.plugin(pgPlugin, { url: server!.url })
      if (options.dev !== false) ctx.plugin(devPlugin)
      await ctx.start()
      return ctx
    },
    async stored(_ctx, id) {
      const { rows } = await client!.query('SELECT event FROM keel_events WHERE session_id = $1 ORDER BY seq', [id])
      return rows.map((row) => row.event as SessionEvent)
    },
    async locked(_ctx, id) {
      // Try the lock from another connection: refused while someone holds it.
      const { rows } = await client!.query('SELECT pg_try_advisory_lock(hashtextextended($1, 40)) AS ok', [id])
      if (rows[0].ok) await client!.query('SELECT pg_advisory_unlock(hashtextextended($1, 40))', [id])
      return !rows[0].ok
    },
    async touch(_ctx, id, seconds) {
      await client!.query('UPDATE keel_sessions SET updated_at = $2 WHERE id = $1', [id, seconds * 1000])
    },
    env: () => ({ KEEL_STORE: server!.url }),
  }
  return [jsonl, postgres]
}
