// A session another process runs is announced to the tabs the first time this host hears of it, from whatever seq:
// its first announcements may have come before this host listened, or while no tab watched. (The tab also lists
// again on each connection's hello, for a session made while it was not connected: browser-store.test's race.)
import { expect, test } from 'vitest'
import type { SessionHeader } from '@keel/session'
import type { SessionFeed } from '@keel/store-pg'
import { RemoteSessions } from '../src/remote.ts'

type Listener = Parameters<SessionFeed['subscribe']>[0]

function host() {
  const frames: { type: string }[] = []
  let listener: Listener | undefined
  const header = (id: string) => ({ id, cwd: '/work' }) as unknown as SessionHeader
  const served = {
    ctx: { sessions: { get: () => undefined, headerOf: header }, emit: () => {} },
    hub: { size: 1, broadcast: (frame: { type: string }) => frames.push(frame) },
    all: true,
    cwd: '/work',
    entry: (event: unknown) => ({ event }),
    infoOfHeader: (h: SessionHeader) => ({ id: h.id }),
  }
  const feed = {
    self: { host: 'beta', pid: 1 },
    subscribe: (l: Listener) => {
      listener = l
      return () => {}
    },
    eventsAfter: () => [],
  }
  const remote = new RemoteSessions(served as never, feed as unknown as SessionFeed)
  return { frames, hear: (id: string, seq: number) => listener!.event!(id, seq), remote }
}

test('a session first heard mid-log is announced once; its next events are not announcements', () => {
  const { frames, hear, remote } = host()
  hear('s1', 7)
  hear('s1', 8)
  hear('s2', 0)
  expect(frames.filter((frame) => frame.type === 'session/created')).toEqual([
    { type: 'session/created', session: { id: 's1' } },
    { type: 'session/created', session: { id: 's2' } },
  ])
  remote.close()
})
