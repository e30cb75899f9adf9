// Faults against a real PostgreSQL server (test-support/postgres.ts): the server restarting mid-turn, a database
// that is not there, a schema from a newer Keel, the database refusing a gap or a duplicate by itself, a password
// that must never be printed, and 20 processes writing 20 sessions each at once.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Context } from 'cordis'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import * as devPlugin from '@keel/session/dev'
import { SessionWriteError, findOpenTurn } from '@keel/session'
import * as pgPlugin from '@keel/store-pg'
import { bundledFixture } from '../../../test-support/bundled-fixture.ts'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the PostgreSQL session store')
const root = fileURLToPath(new URL('../../..', import.meta.url))
const many = fileURLToPath(new URL('./fixtures/many.ts', import.meta.url))
let server: PostgresServer
let client: pg.Client
const contexts: Context[] = []

beforeAll(async () => {
  if (skip) return
  server = await startPostgres()
  client = connect()
  await client.connect()
}, 60_000)
afterAll(async () => {
  await client?.end()
  server?.destroy()
})
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await ctx.stop()
  server?.start()
  if (client) {
    await client.end().catch(() => {})
    client = connect()
    await client.connect()
    await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public')
  }
})

/** The test's own connection; a server restart ends it (the error is expected, not a failure). */
function connect(): pg.Client {
  const next = new pg.Client({ connectionString: server.url })
  next.on('error', () => {})
  return next
}

async function boot(url = server.url): Promise<Context> {
  const ctx = new Context()
  ctx.on('internal/warning', () => {})
  ctx.plugin(pgPlugin, { url })
  ctx.plugin(devPlugin)
  await ctx.start()
  contexts.push(ctx)
  return ctx
}

const append = { surfaceOp: { op: 'append' as const } }

describe.skipIf(skip)('the PostgreSQL store under faults', () => {
  it('a server restart mid-turn: the append fails in one line, what was committed stays, resume closes the turn', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create({ cwd: '/p', id: 'restart' })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'go' }] } }, append)
    session.append('step/start', { turn: 1, step: 1 })
    server.stop('fast')
    let error: Error | undefined
    try {
      session.append('step/end', { turn: 1, step: 1 })
    } catch (caught) {
      error = caught as Error
    }
    expect(error).toBeInstanceOf(SessionWriteError)
    expect(error!.message).toMatch(
      /^could not write step\/end to the session log postgres:\/\/keel@127\.0\.0\.1:\d+\/keel session restart: /,
    )
    expect(error!.message.split('\n')).toHaveLength(1)
    expect(session.seq).toBe(3) // memory and the database agree: the failed event is in neither
    server.start()
    // The lock went with the connection: this process must resume the session to write again.
    expect(() => session.append('step/end', { turn: 1, step: 1 })).toThrow(/the session lock with it/)
    ctx.sessions.close(session)
    const { session: resumed, repairs } = ctx.sessions.open('restart')
    expect(resumed.events.slice(0, 3).map((e) => e.type)).toEqual(['turn/start', 'user/message', 'step/start'])
    expect(repairs[0]).toMatch(/turn 1 was left open by a crash; closed it as interrupted$/)
    expect(findOpenTurn(resumed.events)).toBeUndefined()
  })

  it('a database that is not there: one line naming it without the password, nothing created', async () => {
    const ctx = await boot(`postgres://someone:s3cret-pw@127.0.0.1:${server.port + 1}/keel`)
    let error: Error | undefined
    try {
      ctx.sessions.create({ cwd: '/p', id: 'nowhere' })
    } catch (caught) {
      error = caught as Error
    }
    expect(error!.message).toMatch(
      /^the session store postgres:\/\/someone:\*\*\*@127\.0\.0\.1:\d+\/keel failed: connect ECONNREFUSED/,
    )
    expect(error!.message).not.toContain('s3cret-pw')
    expect(ctx.sessions.get('nowhere')).toBeUndefined()
  })

  it('a wrong password is refused by the server and never printed', async () => {
    const wrong = server.urlWithPassword.replace('hunter2-pw', 'not-the-pw-42')
    const ctx = await boot(wrong)
    expect(() => ctx.sessions.list()).toThrow(/password authentication failed for user "secret"/)
    try {
      ctx.sessions.list()
    } catch (error) {
      expect((error as Error).message).not.toContain('not-the-pw-42')
    }
    // The right one works, and where a session is stored is said without it.
    const good = await boot(server.urlWithPassword)
    const session = good.sessions.create({ cwd: '/p', id: 'pw' })
    expect(good.sessions.pathOf(session.id)).toBe(`postgres://secret:***@127.0.0.1:${server.port}/keel session pw`)
  })

  it('a schema newer than this Keel is refused in one line; the tables are created and versioned by Keel', async () => {
    const ctx = await boot()
    ctx.sessions.list() // creates the tables
    const { rows } = await client.query('SELECT version FROM keel_schema ORDER BY version')
    expect(rows).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }])
    await client.query('INSERT INTO keel_schema VALUES (99)')
    const newer = await boot()
    expect(() => newer.sessions.list()).toThrow(
      /^the session store postgres:\/\/keel@127\.0\.0\.1:\d+\/keel has Keel schema version 99; this Keel knows up to version 3 \(upgrade Keel\)$/,
    )
  })

  it('the database itself refuses a gap and a duplicate, whoever writes', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create({ cwd: '/p', id: 'rows' })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    const row = (seq: number) =>
      client.query('INSERT INTO keel_events (session_id, seq, type, event) VALUES ($1, $2, $3, $4)', [
        'rows',
        seq,
        'test/note',
        JSON.stringify({ type: 'test/note', seq, time: 1, data: { text: 'x' } }),
      ])
    await expect(row(0)).rejects.toThrow(/duplicate key|does not follow/)
    await expect(row(5)).rejects.toThrow(
      /event seq 5 of session rows does not follow the last one \(the log holds 1 events\)/,
    )
    // The next event in order, from a connection that does not hold the session: refused while its process does
    // (a command forging a `session` allow into its own log for the resume to fold back in).
    await expect(row(1)).rejects.toThrow('session rows is held by another process: only it appends to the log')
    session.append('turn/end', { turn: 1, reason: 'completed' })
    expect(ctx.sessions.read('rows').events).toHaveLength(2)
    // Once the process lets the session go, a connection that takes its lock may write (as a resume does).
    ctx.sessions.close(session)
    await client.query('BEGIN')
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('rows', 40))")
    await row(2)
    await client.query('COMMIT')
    expect(ctx.sessions.read('rows').events).toHaveLength(3)
  })

  it('20 processes write 20 sessions each at once: every log whole and in order', async () => {
    const processes = 20
    const sessions = 20
    const turns = 5
    const run = promisify(execFile)
    const outputs = await Promise.all(
      Array.from({ length: processes }, (_, p) =>
        run(process.execPath, [bundledFixture(many), String(p), String(sessions), String(turns)], {
          cwd: root,
          env: { ...process.env, KEEL_STORE: server.url },
          timeout: 120_000,
        }),
      ),
    )
    expect(outputs.every((output) => output.stdout.startsWith('done '))).toBe(true)
    const { rows } = await client.query(
      'SELECT session_id, count(*)::int AS n, max(seq) AS last FROM keel_events GROUP BY session_id',
    )
    expect(rows).toHaveLength(processes * sessions)
    for (const row of rows) expect([row.n, row.last]).toEqual([turns * 3, turns * 3 - 1])
    const ctx = await boot()
    expect(ctx.sessions.list()).toHaveLength(processes * sessions)
    expect(
      ctx.sessions
        .list('/many/7')
        .map((s) => s.id)
        .sort(),
    ).toEqual(Array.from({ length: sessions }, (_, i) => `p7-s${i}`).sort())
  }, 180_000)
})
