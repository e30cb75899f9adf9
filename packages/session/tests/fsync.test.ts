// How many fsyncs a log costs: a fork's copy is one file made visible whole, so one fsync of its bytes (the
// header's and the directory's aside); a close after a durable write has nothing left to sync.
import { afterEach, expect, test } from 'vitest'
import type { Context } from 'cordis'
import { sessionFileIo } from '@keel/session'
import { appendTurn, boot, useTempHome } from './helpers.ts'

useTempHome()
const cwd = '/tmp/keel-fsync-project'
const original = { ...sessionFileIo }
let ctx: Context | undefined
afterEach(async () => {
  Object.assign(sessionFileIo, original)
  await ctx?.stop()
  ctx = undefined
})

/** Counts the writer's fsyncs from now on. */
function countFsyncs(): () => number {
  let count = 0
  sessionFileIo.fsync = (fd) => {
    count++
    original.fsync(fd)
  }
  return () => count
}

test('a fork of a 20-turn session syncs its events once, not once per durable event', async () => {
  ctx = await boot()
  const session = ctx.sessions.create({ cwd })
  for (let turn = 1; turn <= 20; turn++) appendTurn(session, turn)
  const fsyncs = countFsyncs()
  const forkId = ctx.sessions.branch(session.id)
  // The header's fsync (it is written durably on create) and the copy's one.
  expect(fsyncs()).toBe(2)
  expect(ctx.sessions.read(forkId).events).toHaveLength(session.events.length)
})

test('closing a session whose last event was synced does not sync again', async () => {
  ctx = await boot()
  const session = ctx.sessions.create({ cwd })
  appendTurn(session, 1)
  const fsyncs = countFsyncs()
  ctx.sessions.close(session)
  expect(fsyncs()).toBe(0)
})

test('closing a session after an event no fsync covered syncs it', async () => {
  ctx = await boot()
  const session = ctx.sessions.create({ cwd })
  appendTurn(session, 1)
  const fsyncs = countFsyncs()
  // Not a durable type: written, not yet synced.
  session.append('turn/start', { turn: 2, trigger: 'prompt' })
  expect(fsyncs()).toBe(0)
  ctx.sessions.close(session)
  expect(fsyncs()).toBe(1)
})
