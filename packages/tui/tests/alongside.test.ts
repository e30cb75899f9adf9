// Working alongside the agent in the TUI (in process, a recording terminal): a steering message typed while an
// approval waits is queued, never taken as the answer; `/resume` with no argument opens the picker (rows from
// @keel/door/session-rows, a fuzzy filter, an unreadable FIFO listed and not pickable); `/export` writes the session.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterEach, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import { waitFor } from '../../../test-support/harness.ts'
import { SETTLE_MS } from '../src/deliberate.ts'
import { startApp, appIdle, stopApps } from './app-harness.ts'
import { plain, plainLines } from './support.ts'

afterEach(stopApps)
const pause = () => new Promise((done) => setTimeout(done, SETTLE_MS + 50))

test('Enter with text typed while an approval waits queues it as steering; the approval is still open', async () => {
  const { app, terminal } = await startApp(
    [
      { toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo one > one.txt' } }] },
      { text: 'Heard you.' },
    ],
    { plugins: [[permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }]] },
    { prompt: 'go' },
  )
  const screen = () => plainLines(app.frame(100)).join('\n')
  await waitFor(() => app.prompt.active?.callId === 'call-1', 'the ask', 15_000)
  await pause()
  terminal.type('use two.txt instead')
  await pause()
  terminal.type('\r')
  // The Enter sent the text; the approval did not take it.
  expect(app.prompt.active?.callId).toBe('call-1')
  expect(app.agent.queue.list().map((item) => item.kind)).toEqual(['steer'])
  expect(screen()).toContain('↳ after the running tool calls: use two.txt instead')
  expect(app.agent.session.events.some((event) => event.type === 'permission/decision')).toBe(false)
  // Now the approval, with an empty editor: Enter answers it; the steering lands before the next request.
  await pause()
  terminal.type('\r')
  await appIdle(app)
  const events = app.agent.session.events
  const decision = events.find((event) => event.type === 'permission/decision')
  const steer = events.find((event) => event.type === 'user/message' && event.data.message.source === 'steer')
  expect(decision?.data).toMatchObject({ decision: 'allow', scope: 'once' })
  expect(steer!.seq).toBeGreaterThan(decision!.seq)
  expect(screen()).not.toContain('↳ after the running tool calls')
  expect(screen()).toContain('(sent while the agent worked)')
})

test('/resume opens the picker: recent first, columns, fuzzy filter, an unreadable FIFO; /export writes the session', async () => {
  const { keel, app, terminal } = await startApp([{ text: 'parsed' }, { text: 'lexed' }])
  const screen = () => plainLines(app.frame(100)).join('\n')
  app.submit('fix the flaky parser test')
  await appIdle(app)
  const first = app.agent.id
  app.submit('/new')
  app.submit('rename the lexer module')
  await appIdle(app)
  const second = app.agent.id
  const dir = dirname(keel.ctx.sessions.list(keel.cwd)[0]!.path)
  execFileSync('mkfifo', [join(dir, 'zzz-pipe.jsonl')])
  app.submit('/new')
  const mark = terminal.output.length
  // The picker is an overlay: read what the terminal was sent (overlays included), from its last full drawing.
  const drawn = () => {
    const text = plain(terminal.output.slice(mark))
    return text.slice(text.lastIndexOf('Resume a session'))
  }
  app.submit('/resume')
  await waitFor(() => drawn().includes('zzz-pipe'), 'the picker rows', 10_000)
  const at = (text: string) => drawn().indexOf(text)
  expect(at('rename the lexer module')).toBeGreaterThan(0)
  expect(at('rename the lexer module')).toBeLessThan(at('fix the flaky parser test'))
  expect(drawn()).toMatch(/1 turn +(\S+ +)?fix the flaky parser test/)
  expect(drawn()).toContain('zzz-pipe  unreadable: is a FIFO, not a session file')
  await pause()
  // The fuzzy filter leaves the parser session alone, so Enter opens it (unfiltered, the newest would be picked).
  terminal.type('flkypsr')
  await waitFor(() => plain(terminal.output.slice(mark)).includes('flkypsr'), 'the filter', 5_000)
  await pause()
  terminal.type('\r')
  await waitFor(() => app.agent.id === first, 'the picked session to open', 10_000)
  expect(screen()).toContain('› fix the flaky parser test')
  expect(app.agent.id).not.toBe(second)

  app.submit('/export')
  const file = join(keel.cwd, `keel-session-${first.slice(0, 8)}.md`)
  expect(existsSync(file)).toBe(true)
  expect(readFileSync(file, 'utf8')).toContain('> fix the flaky parser test')
  expect(screen()).toContain(`Wrote Markdown of this session to ${file}.`)
  app.submit('/export out.html')
  expect(readFileSync(join(keel.cwd, 'out.html'), 'utf8')).toContain(
    '<div class="user">fix the flaky parser test</div>',
  )
})
