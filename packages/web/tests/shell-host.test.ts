// The web composer's `!command` (session.shell): the same run as the TUI's (@keel/door/user-command), recorded on
// the log for the model's next turn, refused by a deny rule, stopped by session.cancel, and one per session.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import { parseShellMessage } from '@keel/door/shell-message'
import { textOf, type SessionEvent } from '@keel/session'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'

let fixture: HostFixture | undefined
afterEach(async () => {
  await fixture?.dispose()
  fixture = undefined
})

const shellMessages = (f: HostFixture, id: string) =>
  f.k.ctx.sessions
    .get(id)!
    .events.filter(
      (event): event is SessionEvent<'user/message'> =>
        event.type === 'user/message' && event.data.message.source === 'shell',
    )
    .map((event) => parseShellMessage(textOf(event.data.message.content)))

describe('session.shell', () => {
  test('runs through bash, lands on the log and the stream, and the next request carries it', async () => {
    const f = (fixture = await hostFixture([{ text: 'I saw it' }], { shell: true }))
    const { session } = await f.ok('session.create', {})
    const stream = await f.events()
    expect(await f.ok('session.shell', { sessionId: session.id, command: 'echo marker-$((6*7))' })).toEqual({
      ran: true,
    })
    const [run] = shellMessages(f, session.id)
    expect(run?.command).toBe('echo marker-$((6*7))')
    expect(run?.output).toMatch(/^marker-42\n\[exit code 0/)
    await waitFor(
      () => stream.sessionEvents(session.id).some((frame) => frame.event.type === 'user/message'),
      'the run on the stream',
    )
    await f.ok('session.prompt', { sessionId: session.id, text: 'what did I run?' })
    const agent = f.k.ctx.agents.get(session.id)!
    await waitFor(() => agent.session.last?.type === 'turn/end', 'turn end')
    const request = f.k.model.requests[0]!
    expect(request.messages.some((m) => m.role === 'user' && textOf(m.content).includes('marker-42'))).toBe(true)
  })

  test('a deny rule refuses without running or recording; a bare command is a bad request', async () => {
    const f = (fixture = await hostFixture([], {
      shell: true,
      plugins: [
        [permissionsPlugin, { mode: 'yolo', allow: [], deny: ['bash(rm:*)'], sandbox: { allowedDomains: [] } }],
      ],
    }))
    writeFileSync(join(f.k.cwd, 'keep.txt'), 'x')
    const { session } = await f.ok('session.create', {})
    expect(await f.ok('session.shell', { sessionId: session.id, command: 'rm keep.txt' })).toEqual({
      ran: false,
      reason: expect.stringContaining('denied by the rule bash(rm:*)'),
    })
    expect(existsSync(join(f.k.cwd, 'keep.txt'))).toBe(true)
    expect(shellMessages(f, session.id)).toEqual([])
    const bare = await f.rpc('session.shell', { sessionId: session.id, command: '  ' })
    expect(bare).toMatchObject({ ok: false, error: { code: 'bad-request' } })
  })

  test('while it runs a prompt or another command is busy; session.cancel kills it and the run says cancelled', async () => {
    const f = (fixture = await hostFixture([], { shell: true }))
    const { session } = await f.ok('session.create', {})
    const running = f.ok('session.shell', { sessionId: session.id, command: 'sleep 30.4417; echo never' })
    await waitFor(() => f.host.openSessions === 1 && processRunning('30.4417'), 'the command to run')
    expect(await f.rpc('session.prompt', { sessionId: session.id, text: 'now' })).toMatchObject({
      ok: false,
      error: { code: 'busy', message: expect.stringContaining('a command is running') },
    })
    expect(await f.rpc('session.shell', { sessionId: session.id, command: 'true' })).toMatchObject({
      ok: false,
      error: { code: 'busy' },
    })
    expect(await f.ok('session.cancel', { sessionId: session.id })).toEqual({ cancelled: true })
    expect(await running).toEqual({ ran: true })
    expect(shellMessages(f, session.id).map((run) => run.output)).toEqual(['[cancelled by the user]'])
    expect(processRunning('30.4417')).toBe(false)
    expect(await f.ok('session.cancel', { sessionId: session.id })).toEqual({ cancelled: false })
  })
})

/** A process whose command line holds `marker` (the sleep a test started) is alive. */
function processRunning(marker: string): boolean {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) return true
    } catch {}
  }
  return false
}
