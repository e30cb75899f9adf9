// The PostgreSQL session store against the JSONL files, in the same run: a durable append's latency (the server with
// fsync on, synchronous_commit as shipped), the standing plan of a 1,000,000-event session (its tail read by key vs
// the file's backscan), how long another process takes to follow an append (LISTEN/NOTIFY, then a read by seq), and
// throughput with 20 processes writing at once. Needs Debian's postgresql; skipped without.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Context } from 'cordis'
import pg from 'pg'
import * as sessionPlugin from '@keel/session'
import { backscan, type Session, sessionPath } from '@keel/session'
import * as pgPlugin from '@keel/store-pg'
import { feedOf } from '@keel/store-pg'
import { settlePlan, storedPlanOf } from '@keel/todo'
import { HAS_POSTGRES, startPostgres } from '../test-support/postgres.ts'
import { median, ms, percentile, ratio, row } from './stats.ts'

if (!HAS_POSTGRES) {
  console.log('postgresql is not installed (apt-get install postgresql): skipped')
} else {
  const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-pg-'))
  const previousHome = process.env.KEEL_HOME
  process.env.KEEL_HOME = join(scratch, 'home')
  const server = await startPostgres({ fsync: true })
  const boot = async (plugin: object, config?: object) => {
    const ctx = new Context()
    ctx.on('internal/warning', () => {})
    ctx.plugin(plugin as never, config)
    await ctx.start()
    return ctx
  }
  const files = await boot(sessionPlugin)
  const db = await boot(pgPlugin, { url: server.url })
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    // 1. Append latency: a tool/result each, interleaved between the stores.
    const result = (session: Session, n: number) =>
      session.append(
        'tool/result',
        { turn: 1, step: 1, callId: `c${n}`, content: [{ type: 'text', text: 'x'.repeat(600) }], isError: false },
        { surfaceOp: { op: 'append' } },
      )
    const a = files.sessions.create({ cwd: '/bench', id: 'append-files' })
    const b = db.sessions.create({ cwd: '/bench', id: 'append-pg' })
    const fileTimes: number[] = []
    const dbTimes: number[] = []
    for (let i = 0; i < 400; i++) {
      let t = performance.now()
      result(a, i)
      fileTimes.push(performance.now() - t)
      t = performance.now()
      result(b, i)
      dbTimes.push(performance.now() - t)
    }
    row('durable append, JSONL (fsync)', `median ${ms(median(fileTimes))}`, `p99 ${ms(percentile(fileTimes, 99))}`)
    row(
      'durable append, PostgreSQL (commit)',
      `median ${ms(median(dbTimes))}`,
      `p99 ${ms(percentile(dbTimes, 99))}`,
      ratio(median(dbTimes), median(fileTimes)),
    )

    // 1b. Following: from an append here to another process's host (its own connections) having read it by seq, as
    // `keel serve` does for a session another machine runs; against the append alone.
    const reader = await boot(pgPlugin, { url: server.url })
    const feed = feedOf(reader.sessions)!
    const followed = db.sessions.create({ cwd: '/bench', id: 'followed' })
    let wake: (() => void) | undefined
    const stop = feed.subscribe({
      event: (id, seq) => {
        if (id !== 'followed') return
        feed.eventsAfter(id, seq - 1, 1)
        wake?.()
      },
    })
    const followTimes: number[] = []
    // The feed does not keep a process alive (a server does): this wait needs something that does.
    const alive = setInterval(() => {}, 1000)
    for (let i = 0; i < 200; i++) {
      const heard = new Promise<void>((done) => {
        wake = done
      })
      const t = performance.now()
      result(followed, i)
      await heard
      followTimes.push(performance.now() - t)
    }
    clearInterval(alive)
    stop()
    await reader.stop()
    row(
      'append → read by another process (NOTIFY, LISTEN, read by seq)',
      `median ${ms(median(followTimes))}`,
      `p99 ${ms(percentile(followTimes, 99))}`,
      ratio(median(followTimes), median(dbTimes)),
    )

    // 2. The standing plan of a 1,000,000-event session: the latest todo/write is 10 events from the end.
    const N = 1_000_000
    const plan = N - 10
    const eventJson = (seq: number) =>
      seq === plan
        ? JSON.stringify({
            type: 'todo/write',
            seq,
            time: seq,
            data: { todos: [{ content: 'ship it', status: 'in_progress' }] },
          })
        : JSON.stringify({ type: 'step/start', seq, time: seq, data: { turn: 1, step: seq } })
    const header = { type: 'session', version: 1, id: 'million', createdAt: 0, cwd: '/bench' }
    const path = sessionPath('/bench', 'million')
    const lines = [JSON.stringify(header)]
    for (let seq = 0; seq < N; seq++) lines.push(eventJson(seq))
    writeFileSync(path, `${lines.join('\n')}\n`)
    await client.query(
      "INSERT INTO keel_sessions (id, cwd, host, created_at, updated_at, header, next_seq) VALUES ('million', '/bench', 'bench', 0, 0, $1, $2)",
      [JSON.stringify(header), N],
    )
    // Loaded in bulk with the order trigger off (its checks are per row; the rows are in order by construction).
    await client.query('ALTER TABLE keel_events DISABLE TRIGGER keel_event_in_order')
    for (let start = 0; start < N; start += 100_000) {
      await client.query(
        `INSERT INTO keel_events (session_id, seq, type, event)
         SELECT 'million', s, CASE WHEN s = $3 THEN 'todo/write' ELSE 'step/start' END,
           CASE WHEN s = $3 THEN json_build_object('type', 'todo/write', 'seq', s, 'time', s, 'data',
             json_build_object('todos', json_build_array(json_build_object('content', 'ship it', 'status', 'in_progress'))))
           ELSE json_build_object('type', 'step/start', 'seq', s, 'time', s, 'data', json_build_object('turn', 1, 'step', s)) END
         FROM generate_series($1::int, $2::int) AS s`,
        [start, Math.min(N, start + 100_000) - 1, plan],
      )
    }
    await client.query('ALTER TABLE keel_events ENABLE TRIGGER keel_event_in_order')
    await client.query('ANALYZE keel_events')
    const fileRuns: number[] = []
    const dbRuns: number[] = []
    for (let i = 0; i < 20; i++) {
      let t = performance.now()
      backscan(path, settlePlan)
      fileRuns.push(performance.now() - t)
      t = performance.now()
      const found = storedPlanOf(db.sessions, 'million')
      dbRuns.push(performance.now() - t)
      if (found.todos?.[0]?.content !== 'ship it') throw new Error('the stored plan is not the one written')
    }
    row('standing plan at 1M events, JSONL backscan', `median ${ms(median(fileRuns))}`)
    row(
      'standing plan at 1M events, PostgreSQL by key',
      `median ${ms(median(dbRuns))}`,
      ratio(median(dbRuns), median(fileRuns)),
    )

    // 3. Twenty processes writing 5 sessions each at once (3 events a turn, 20 turns): events per second, each store.
    const many = fileURLToPath(new URL('../packages/store-pg/tests/fixtures/many.ts', import.meta.url))
    const run = promisify(execFile)
    // Each process reports how long its writing took (start-up excluded); the slowest bounds the concurrent window.
    const throughput = async (env: Record<string, string>) => {
      const outputs = await Promise.all(
        Array.from({ length: 20 }, (_, p) =>
          run(process.execPath, ['--import', 'tsx', many, String(p), '5', '20'], { env: { ...process.env, ...env } }),
        ),
      )
      const spent = outputs.map((output) => Number(/^done \d+ (\S+)/.exec(output.stdout)?.[1]))
      return { wall: Math.max(...spent), events: 20 * 5 * 20 * 3 }
    }
    const fileRun = await throughput({ KEEL_STORE: '', KEEL_HOME: join(scratch, 'many-home') })
    const dbRun = await throughput({ KEEL_STORE: server.url })
    const perSecond = (r: { wall: number; events: number }) => `${Math.round(r.events / (r.wall / 1000))} events/s`
    row('20 writers × 5 sessions, JSONL (writing time)', perSecond(fileRun), ms(fileRun.wall))
    row(
      '20 writers × 5 sessions, PostgreSQL (writing time)',
      perSecond(dbRun),
      ms(dbRun.wall),
      ratio(dbRun.wall, fileRun.wall),
    )
  } finally {
    await client.end()
    await files.stop()
    await db.stop()
    server.destroy()
    if (previousHome === undefined) delete process.env.KEEL_HOME
    else process.env.KEEL_HOME = previousHome
    rmSync(scratch, { recursive: true, force: true })
  }
}
