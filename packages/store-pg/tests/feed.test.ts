import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { approvalKey, askDigest, feedOf, provenAnswer, type SessionFeed } from '@keel/store-pg'
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
const home = mkdtempSync(join(tmpdir(), 'keel-feed-home-'))
const key = approvalKey(join(home, 'approval.key'))
const stores = new StoreContexts(() => server.url)
const boot = stores.boot.bind(stores)

beforeAll(async () => {
  if (!skip) server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await stores.stop()
  server?.destroy()
  rmSync(home, { recursive: true, force: true })
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
    const nonce = mine.putAsk('asking', 'call 1', 'asking', ask)
    await until(() => changes.length === 1, 'the ask announced')
    expect(changes).toEqual(['asking call 1'])
    expect(theirs.waitingOn('asking').map((row) => [row.ask, row.nonce])).toEqual([[ask, nonce]])
    // A question asked again for the same call gets a new nonce: an answer to the old one does not fit it.
    expect(mine.putAsk('asking', 'call 1', 'asking', ask)).not.toBe(nonce)
    const read = theirs.ask('asking', 'call 1')!
    const current = read.nonce!
    const allow = { decision: 'allow', scope: 'once' }
    expect(theirs.answer({ ...read, callId: 'forged' }, allow, 'beta', key)).toBe(false)
    expect(theirs.answer({ ...read, nonce }, allow, 'beta', key)).toBe(false)
    expect(theirs.answer(read, allow, 'beta', key)).toBe(true)
    expect(theirs.answer(read, { decision: 'deny', scope: 'once' }, 'gamma', key)).toBe(false)
    const [answered] = mine.answeredAsks()
    expect([answered!.answer, answered!.answeredFrom]).toEqual([allow, 'beta'])
    // The proof holds for this ask, this question, this answer and this machine; anything else changed breaks it.
    const target = { sessionId: 'asking', callId: 'call 1', nonce: current, asked: askDigest(ask), from: 'beta' }
    expect(provenAnswer(key, target, answered!.answer!, answered!.proof)).toEqual(allow)
    expect(provenAnswer(key, { ...target, nonce }, allow, answered!.proof)).toBeUndefined()
    const shown = askDigest({ ...ask, summary: 'bash: echo hi' })
    expect(provenAnswer(key, { ...target, asked: shown }, allow, answered!.proof)).toBeUndefined()
    expect(provenAnswer(key, { ...target, from: 'gamma' }, allow, answered!.proof)).toBeUndefined()
    expect(provenAnswer(key, { ...target, callId: 'call 2' }, allow, answered!.proof)).toBeUndefined()
    expect(provenAnswer(key, target, { ...allow, scope: 'always' }, answered!.proof)).toBeUndefined()
    expect(provenAnswer(key, target, allow, undefined)).toBeUndefined()
    expect(provenAnswer(approvalKey(join(home, 'other.key')), target, allow, answered!.proof)).toBeUndefined()
    // Refused by the owner, the answer goes and the ask waits again; another process cannot clear it.
    theirs.refuseAnswer('asking', 'call 1', current)
    expect(mine.answeredAsks()).toHaveLength(1)
    mine.refuseAnswer('asking', 'call 1', current)
    expect(mine.answeredAsks()).toEqual([])
    expect(theirs.waitingOn('asking').map((row) => row.callId)).toEqual(['call 1'])
    expect(theirs.answer(read, allow, 'beta', key)).toBe(true)
    // Only the owner settles its own asks.
    theirs.settleAsk('asking', 'call 1', false)
    expect(theirs.ask('asking', 'call 1')!.settled).toBe(false)
    mine.settleAsk('asking', 'call 1', true)
    expect(theirs.ask('asking', 'call 1')).toMatchObject({ settled: true, taken: true })
    expect(theirs.waitingOn('asking')).toEqual([])

    // An owner that let the session go (or died) leaves an ask nobody may answer.
    mine.putAsk('asking', 'call 2', 'asking', { ...ask, callId: 'call 2' })
    const second = theirs.ask('asking', 'call 2')!
    owner.sessions.close(session)
    expect(theirs.waitingOn('asking')).toEqual([])
    expect(theirs.answer(second, allow, 'beta', key)).toBe(false)
  })

  test('the approval key: made once, mode 0600, kept; a file that is not one is refused naming it', () => {
    const path = join(home, 'made', 'approval.key')
    expect(existsSync(path)).toBe(false)
    const made = approvalKey(path)
    expect(made.secret).toHaveLength(32)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(approvalKey(path).secret.equals(made.secret)).toBe(true)
    expect(readFileSync(path, 'utf8').trim()).toBe(made.secret.toString('base64url'))
    const bad = join(home, 'bad.key')
    writeFileSync(bad, 'short\n')
    expect(() => approvalKey(bad)).toThrow(
      `the approval key ${bad} is not a key (expected 32 bytes, base64url): copy it again`,
    )
  })
})
