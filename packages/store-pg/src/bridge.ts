// The session log's contract is synchronous: `Session.append` returns once the event is stored, exactly as the JSONL
// store returns after its write (and fsync). A PostgreSQL client is asynchronous, so the client runs in a worker
// thread and the main thread waits for each answer on a shared counter (Atomics.wait), bounded by a timeout: a
// database that does not answer ends the call with an error instead of hanging the process. The worker is plain
// JavaScript passed as a string (as @keel/fs's regex worker), so it runs the same from the sources, under vitest and
// from the bundle; it loads `pg` from the path this module resolves.
import { createRequire } from 'node:module'
import type { MessagePort, Worker } from 'node:worker_threads'

const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads')
const pg = require(workerData.pgPath)
const { port, notices, shared, url, application, connectMs, queryMs } = workerData
const signal = new Int32Array(shared)
// json columns come back as text: the main thread parses them (fresh objects it may freeze in place).
const types = { getTypeParser: (oid, format) => (oid === 114 ? (text) => text : pg.types.getTypeParser(oid, format)) }
let client
let connecting
/** Session ids whose advisory lock this process holds on the current connection. */
const held = new Set()
/** Session ids whose lock went with a connection that ended. */
const lost = new Set()

function loseConnection() {
  for (const id of held) lost.add(id)
  held.clear()
  const old = client
  client = undefined
  connecting = undefined
  if (old) old.end().catch(() => {})
}

async function connection() {
  if (client) return client
  if (!connecting) {
    const next = new pg.Client({
      connectionString: url,
      application_name: application,
      connectionTimeoutMillis: connectMs,
      query_timeout: queryMs,
      types,
    })
    next.on('error', () => { if (client === next) loseConnection() })
    next.on('end', () => { if (client === next) loseConnection() })
    connecting = next.connect().then(() => { client = next; return next }, (error) => { connecting = undefined; next.end().catch(() => {}); throw error })
  }
  return connecting
}

// LISTEN runs on a connection of its own (the calls' connection is busy with queries and may be dropped with its
// locks): its notifications go to the main thread through the notices port. A dropped one reconnects with a growing pause,
// and says so, so the reader catches up by seq on what was committed meanwhile.
let listener
let listening = false
let retries = 0

function connectListener(again) {
  const next = new pg.Client({
    connectionString: url,
    application_name: (application + ' listen').slice(0, 63),
    connectionTimeoutMillis: connectMs,
    types,
  })
  listener = next
  const lost = () => {
    if (listener !== next) return
    listener = undefined
    next.end().catch(() => {})
    if (!listening) return
    const pause = Math.min(5000, 100 * 2 ** retries++)
    setTimeout(() => { if (listening && !listener) connectListener(true) }, pause)
  }
  next.on('error', lost)
  next.on('end', lost)
  next.on('notification', (message) => notices.postMessage({ kind: 'notify', channel: message.channel, payload: message.payload }))
  next.connect()
    .then(() => next.query('LISTEN keel_events; LISTEN keel_asks'))
    .then(() => { retries = 0; notices.postMessage({ kind: 'listening', again }) }, lost)
}

async function run(op) {
  if (op.kind === 'listen') {
    if (!listening) { listening = true; connectListener(op.again === true) }
    return true
  }
  if (op.kind === 'query' || op.kind === 'locked-query') {
    if (op.kind === 'locked-query' && !held.has(op.id)) {
      const error = new Error(lost.has(op.id) ? 'the connection to the database ended, and the session lock with it' : 'this process does not hold the session lock')
      error.code = 'KEEL_LOCK_LOST'
      throw error
    }
    const db = await connection()
    try {
      const result = await db.query(op.sql, op.params)
      return { rows: result.rows, rowCount: result.rowCount }
    } catch (error) {
      // A query the server refused leaves the connection usable; anything else (a timeout, a reset) does not.
      if (!error || typeof error.code !== 'string' || error.code.length !== 5) loseConnection()
      throw error
    }
  }
  if (op.kind === 'transaction') {
    const db = await connection()
    try {
      await db.query('BEGIN')
      const results = []
      for (const [sql, params] of op.statements) results.push((await db.query(sql, params)).rows)
      await db.query('COMMIT')
      return results
    } catch (error) {
      try { await db.query('ROLLBACK') } catch { loseConnection() }
      throw error
    }
  }
  if (op.kind === 'migrate') {
    // One transaction per step, under a transaction-scoped advisory lock; the version is read under the lock, so
    // two processes starting together apply each step once.
    const db = await connection()
    for (;;) {
      await db.query('BEGIN')
      try {
        await db.query('SELECT pg_advisory_xact_lock($1)', [op.lockKey])
        await db.query('CREATE TABLE IF NOT EXISTS keel_schema (version integer NOT NULL)')
        const { rows } = await db.query('SELECT coalesce(max(version), 0) AS version FROM keel_schema')
        const current = rows[0].version
        if (current >= op.migrations.length) {
          await db.query('COMMIT')
          return current
        }
        await db.query(op.migrations[current])
        await db.query('INSERT INTO keel_schema VALUES ($1)', [current + 1])
        await db.query('COMMIT')
      } catch (error) {
        try { await db.query('ROLLBACK') } catch { loseConnection() }
        throw error
      }
    }
  }
  if (op.kind === 'lock') {
    const db = await connection()
    const { rows } = await db.query('SELECT pg_try_advisory_lock(hashtextextended($1, 40)) AS ok', [op.id])
    if (rows[0].ok) { held.add(op.id); lost.delete(op.id) }
    return rows[0].ok
  }
  if (op.kind === 'unlock') {
    const had = held.delete(op.id)
    lost.delete(op.id)
    if (had && client) await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 40))', [op.id])
    return true
  }
  if (op.kind === 'end') {
    held.clear()
    listening = false
    const ear = listener
    listener = undefined
    if (ear) await ear.end().catch(() => {})
    const old = client
    client = undefined
    if (old) await old.end()
    return true
  }
  throw new Error('unknown operation ' + op.kind)
}

port.on('message', (op) => {
  run(op).then(
    (value) => port.postMessage({ ok: true, value }),
    (error) => port.postMessage({ ok: false, message: String((error && error.message) || error), code: error && error.code }),
  ).finally(() => {
    Atomics.add(signal, 0, 1)
    Atomics.notify(signal, 0)
  })
})
`

/** A failure the database (or the way to it) reported; `code` is PostgreSQL's SQLSTATE when it sent one. */
class PgCallError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message)
    this.name = 'PgCallError'
  }
}

export type PgOp =
  | { kind: 'query'; sql: string; params?: unknown[] }
  | { kind: 'locked-query'; id: string; sql: string; params?: unknown[] }
  | { kind: 'transaction'; statements: [string, unknown[]][] }
  | { kind: 'migrate'; lockKey: number; migrations: readonly string[] }
  | { kind: 'lock'; id: string }
  | { kind: 'unlock'; id: string }
  | { kind: 'listen'; again?: boolean }
  | { kind: 'end' }

/** What the LISTEN connection says: a notification, or that it listens (again: after a dropped connection). */
export type PgNotice = { kind: 'notify'; channel: string; payload: string } | { kind: 'listening'; again: boolean }

export interface BridgeOptions {
  url: string
  /** What the server shows for this connection (`pg_stat_activity.application_name`). */
  application: string
  connectMs: number
  queryMs: number
}

/** One connection to PostgreSQL, called synchronously. Its session locks die with it (or with this process). */
export class SyncPg {
  private worker: Worker | undefined
  private port: MessagePort | undefined
  private signal: Int32Array | undefined
  private notices: MessagePort | undefined
  private onNotice: ((notice: PgNotice) => void) | undefined
  private readonly receive: (port: MessagePort) => { message: unknown } | undefined

  constructor(private readonly options: BridgeOptions) {
    const threads = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads')
    this.receive = threads.receiveMessageOnPort as never
  }

  private start(): void {
    const require = createRequire(import.meta.url)
    const { Worker, MessageChannel } = require('node:worker_threads') as typeof import('node:worker_threads')
    const shared = new SharedArrayBuffer(4)
    const { port1, port2 } = new MessageChannel()
    const ear = new MessageChannel()
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { port: port2, notices: ear.port2, shared, pgPath: require.resolve('pg'), ...this.options },
      transferList: [port2, ear.port2],
    })
    // Notifications arrive on the event loop; like the worker, this port does not keep the process alive.
    ear.port1.on('message', (notice: PgNotice) => this.onNotice?.(notice))
    ear.port1.unref()
    this.notices = ear.port1
    // The worker must not keep a finished process alive; the port is only read synchronously.
    this.worker.unref()
    port1.unref()
    this.port = port1
    this.signal = new Int32Array(shared)
  }

  /** Runs one operation and waits for its answer; throws a PgCallError with the database's message. */
  call<T>(op: PgOp): T {
    if (!this.worker) {
      this.start()
      // A worker started again (the last one timed out) listens again, and says so: the reader catches up by seq.
      if (this.onNotice && op.kind !== 'listen') this.call({ kind: 'listen', again: true })
    }
    const signal = this.signal!
    const before = Atomics.load(signal, 0)
    this.port!.postMessage(op)
    const deadline = this.options.connectMs + this.options.queryMs + 1000
    if (Atomics.wait(signal, 0, before, deadline) === 'timed-out') {
      this.stop()
      throw new PgCallError(`the database did not answer within ${Math.round(deadline / 1000)} s`, 'KEEL_TIMEOUT')
    }
    const reply = this.receive(this.port!)?.message as
      | { ok: true; value: T }
      | { ok: false; message: string; code?: string }
      | undefined
    if (!reply) throw new PgCallError('the database worker gave no answer', undefined)
    if (!reply.ok) throw new PgCallError(reply.message, reply.code)
    return reply.value
  }

  /** Starts listening on `keel_events` and `keel_asks` (a connection of its own); each notice goes to `handler`. */
  listen(handler: (notice: PgNotice) => void): void {
    this.onNotice = handler
    this.call({ kind: 'listen' })
  }

  /** Ends the connection (releasing its locks) and the worker. */
  close(): void {
    this.onNotice = undefined
    if (!this.worker) return
    try {
      this.call({ kind: 'end' })
    } catch {}
    this.stop()
  }

  private stop(): void {
    void this.worker?.terminate()
    this.port?.close()
    this.notices?.close()
    this.worker = undefined
    this.port = undefined
    this.notices = undefined
  }
}
