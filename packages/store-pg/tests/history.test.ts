// The web host's paged history and standing plan read a PostgreSQL session through the store's backscan (by key,
// newest first) and give exactly the pages and plans that the in-memory log gives.
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as pgPlugin from '@keel/store-pg'
import { standingPlan } from '@keel/todo'
import { pageOfEvents, pageOfFile, standingPlanOfFile, type LogTail } from '../../web/src/history.ts'
import { buildLog } from '../../web/tests/log-fixture.ts'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the PostgreSQL session store')
let server: PostgresServer
let ctx: Context

beforeAll(async () => {
  if (skip) return
  server = await startPostgres()
  ctx = new Context()
  ctx.plugin(pgPlugin, { url: server.url })
  await ctx.start()
}, 60_000)
afterAll(async () => {
  await ctx?.stop()
  server?.destroy()
})

describe.skipIf(skip)('history over PostgreSQL', () => {
  test('every page and the standing plan as of each page match the in-memory log', () => {
    const log = buildLog(600)
    const id = 'paged'
    // Stored as a fork would be: the whole log in one transaction.
    ctx.sessions.backend.write({ ...log.header, id }, log.events)
    const tail: LogTail = (visit) => ctx.sessions.backscan(id, visit)
    for (const maxMessages of [1, 3, 50]) {
      let beforeSeq: number | undefined
      for (;;) {
        const live = pageOfEvents(log.events, { beforeSeq, maxMessages })
        const stored = pageOfFile(tail, { beforeSeq, maxMessages })
        expect(stored.events).toEqual(live.events)
        expect(stored.hasMore).toBe(live.hasMore)
        const asOf = stored.events.at(-1)!.seq
        expect(standingPlanOfFile(tail, asOf, []).todos).toEqual(standingPlan(log.events.slice(0, asOf + 1)))
        if (!stored.hasMore) break
        beforeSeq = stored.events[0]!.seq
      }
    }
    // The tail page reads about a page's worth of rows, not the log.
    const page = pageOfFile(tail, { maxMessages: 3 })
    const total = ctx.sessions.backscan(id, () => undefined).bytesRead
    expect(page.bytesRead).toBeLessThan(total / 5)
  })
})
