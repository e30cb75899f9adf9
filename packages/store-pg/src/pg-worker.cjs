// The PostgreSQL client of @keel/store-pg's bridge (bridge.ts), in a worker thread of its own: the main thread posts
// one operation at a time and waits on the shared counter, which this worker bumps after each answer. Plain CommonJS
// so the same file runs from the sources (pg from node_modules) and from the bundle (scripts/build.mjs bundles it,
// pg included, beside the chunks: a global install has no node_modules).
const { workerData } = require('node:worker_threads')
const pg = require('pg')
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
  return next.connect()
    .then(() => next.query('LISTEN keel_events; LISTEN keel_asks'))
    .then(() => { retries = 0; notices.postMessage({ kind: 'listening', again }) }, lost)
}

async function run(op) {
  if (op.kind === 'listen') {
    // Answered once it listens (or the first try failed and a retry is on its way): what is committed after
    // this call returns is announced.
    if (!listening) { listening = true; await connectListener(op.again === true) }
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
