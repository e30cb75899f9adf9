import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { feedOf, type SessionFeed } from '@keel/store-pg'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { StoreContexts, until } from '../../../test-support/store-contexts.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'

declare module '@keel/session' {
  interface SessionEventMap {
    'test/note': { text: string }
  }
}

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the PostgreSQL session store')
let server: PostgresServer
const stores = new StoreContexts(() => server.url)
const boot = stores.boot.bind(stores)

beforeAll(async () => {
  if (!skip) server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await stores.stop()
  server?.destroy()
})

async function sql(statement: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    return (await client.query(statement, params)).rows
  } finally {
    await client.end()
  }
}

describe.skipIf(skip)('following through the store', () => {
  test("another process's appends are announced by seq and read by key; a dropped LISTEN catches up", async () => {
    const writer = await boot('alpha')
    const reader = await boot('beta')
    const feed: SessionFeed = feedOf(reader.sessions)!
    const heard: string[] = []
    let resumed = 0
    feed.subscribe({ event: (id, seq) => heard.push(`${id} ${seq}`), resumed: () => resumed++ })
    process.env.KEEL_HOST = 'alpha'
    const session = writer.sessions.create({ cwd: '/p', id: 'followed' })
    delete process.env.KEEL_HOST
    session.append('test/note', { text: 'one' })
    session.append('test/note', { text: 'two' })
    await until(() => heard.length === 2, 'two announcements')
    expect(heard).toEqual(['followed 0', 'followed 1'])
    expect(feed.eventsAfter('followed', 0).map((event) => event.data)).toEqual([{ text: 'two' }])
    expect(feed.whereRuns('followed')).toEqual({ host: 'alpha', open: true })
    expect([...feed.openOf(['followed', 'nothing'])]).toEqual(['followed'])

    // The LISTEN connection is cut: what is committed meanwhile is not announced, the reader is told it listens
    // again, and reads on from the last seq it had.
    const cut = await sql(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE 'keel beta % listen'",
    )
    expect(cut).toEqual([{ ok: true }])
    session.append('test/note', { text: 'three' })
    await until(() => resumed === 1, 'the reader listening again')
    expect(feed.eventsAfter('followed', 1).map((event) => event.data)).toEqual([{ text: 'three' }])
    session.append('test/note', { text: 'four' })
    await until(() => heard.includes('followed 3'), 'the announcement after the reconnect')

    writer.sessions.close(session)
    expect(feed.whereRuns('followed')).toEqual({ host: 'alpha', open: false })
  })

  test('asks: the first remote answer is kept, only while the owner holds the session; the owner settles', async () => {
    const owner = await boot('alpha')
    const other = await boot('beta')
    const mine = feedOf(owner.sessions)!
    const theirs = feedOf(other.sessions)!
    const changes: string[] = []
    theirs.subscribe({ ask: (sessionId, callId) => changes.push(`${sessionId} ${callId}`) })
    const session = owner.sessions.create({ cwd: '/p', id: 'asking' })
    const ask = { sessionId: 'asking', callId: 'call 1', tool: 'bash', summary: 'bash: make' }
    mine.putAsk('asking', 'call 1', 'asking', ask)
    await until(() => changes.length === 1, 'the ask announced')
    expect(changes).toEqual(['asking call 1'])
    expect(theirs.waitingOn('asking').map((row) => row.ask)).toEqual([ask])

    expect(theirs.answer('asking', 'forged', { decision: 'allow', scope: 'once' }, 'beta')).toBe(false)
    expect(theirs.answer('asking', 'call 1', { decision: 'allow', scope: 'once' }, 'beta')).toBe(true)
    expect(theirs.answer('asking', 'call 1', { decision: 'deny', scope: 'once' }, 'gamma')).toBe(false)
    expect(mine.answeredAsks().map((row) => [row.answer, row.answeredFrom])).toEqual([
      [{ decision: 'allow', scope: 'once' }, 'beta'],
    ])
    // Only the owner settles its own asks.
    theirs.settleAsk('asking', 'call 1', false)
    expect(theirs.ask('asking', 'call 1')!.settled).toBe(false)
    mine.settleAsk('asking', 'call 1', true)
    expect(theirs.ask('asking', 'call 1')).toMatchObject({ settled: true, taken: true })
    expect(theirs.waitingOn('asking')).toEqual([])

    // An owner that let the session go (or died) leaves an ask nobody may answer.
    mine.putAsk('asking', 'call 2', 'asking', { ...ask, callId: 'call 2' })
    owner.sessions.close(session)
    expect(theirs.waitingOn('asking')).toEqual([])
    expect(theirs.answer('asking', 'call 2', { decision: 'allow', scope: 'once' }, 'beta')).toBe(false)
  })
})
