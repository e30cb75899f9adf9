// Working alongside the agent, in the real binary in tmux against a fake OpenAI-compatible server on 127.0.0.1:
// a message typed during a `sleep` tool call is steering (the next request of the same turn carries it), one sent
// with Alt+Enter starts the next turn, each shows under the editor until delivered, `keel -c` shows the steering
// where it landed; and with another tmux window focused, the end of the turn rings the bell and writes OSC 9 and
// OSC 777 (the bytes are read from `script`'s typescript of the terminal).
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the steering terminal test')
const cleanups: (() => unknown)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

/** The text of every user message of a recorded OpenAI-format request, in order. */
function userTexts(body: { messages: { role: string; content: unknown }[] }): string[] {
  return body.messages
    .filter((message) => message.role === 'user')
    .map((message) =>
      typeof message.content === 'string'
        ? message.content
        : (message.content as { text?: string }[]).map((part) => part.text ?? '').join(''),
    )
}

test.skipIf(skip)(
  'steering during a sleep reaches the next request of the same turn; Alt+Enter is the next turn; the bell and OSC 9 when away',
  async () => {
    const fake = await startFakeProvider([
      { toolCalls: [{ name: 'bash', arguments: JSON.stringify({ command: 'sleep 4; echo slept' }) }] },
      { text: 'Steered: using the other file.' },
      { text: 'Follow-up done: notes written.' },
      { text: 'Third answer.' },
    ])
    cleanups.push(() => fake.close())
    const tmux = new Tmux(110, 40)
    const home = mkdtempSync(join(tmpdir(), 'keel-steer-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-steer-cwd-'))
    mkdirSync(join(cwd, '.git'))
    cleanups.push(() => {
      tmux.dispose()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    })
    // The person's own settings: desktop notifications (the bell, OSC 9, OSC 777), only while away (the default).
    writeFileSync(join(home, 'settings.json'), JSON.stringify({ notify: 'desktop' }))
    writeFileSync(tmux.conf, 'set -s escape-time 0\nset -g focus-events on\nset -g history-limit 5000\n')
    const bytes = join(tmux.dir, 'typescript')
    const keel = (flags: string) =>
      `cd '${cwd}' && env KEEL_HOME='${home}' OPENAI_API_KEY=test node '${join(REPO, 'bin/keel.js')}' --trust --allow bash --model openai-compatible/test-model --base-url '${fake.url}/v1' ${flags}; echo "[keel exited $?]"; sleep 600`
    const screen = () => tmux.screen('one')
    const has =
      (...parts: string[]) =>
      () =>
        parts.every((part) => screen().includes(part))

    tmux.start('one', `script -q -f '${bytes}' -c "${keel('').replace(/"/g, '\\"')}"`)
    await until(has('test-model', '─────'), 'the UI to start', 60_000, screen)

    tmux.type('one', 'run the slow command')
    tmux.key('one', 'Enter')
    await until(has('sleep 4'), 'the sleep to run', 20_000, screen)
    tmux.type('one', 'not that file, the other one')
    tmux.key('one', 'Enter')
    await until(
      has('↳ after the running tool calls: not that file, the other one'),
      'the steering shown under the editor',
      10_000,
      screen,
    )
    tmux.type('one', 'then write the notes')
    tmux.key('one', 'M-Enter')
    await until(has('⏭ as the next turn: then write the notes'), 'the follow-up shown', 10_000, screen)
    expect(fake.requests).toHaveLength(1)
    // Look elsewhere: a second window takes the focus (tmux reports it to keel's pane, which asked for it).
    tmux.run('new-window', '-d', '-t', 'one', 'sleep 600')
    tmux.run('select-window', '-t', 'one:1')
    await until(() => fake.requests.length >= 3, 'the follow-up request', 30_000, screen)
    tmux.run('select-window', '-t', 'one:0')
    await until(has('Follow-up done: notes written.'), 'the follow-up answer', 20_000, screen)
    await until(() => !screen().includes('↳') && !screen().includes('⏭'), 'the queue to empty', 10_000, screen)

    // The second request is the same turn's next step: after the tool result, it carries the steering message.
    const second = fake.requests[1]!.body
    expect(userTexts(second)).toEqual(['run the slow command', 'not that file, the other one'])
    const roles = second.messages.map((message: { role: string }) => message.role)
    expect(roles.slice(-3)).toEqual(['assistant', 'tool', 'user'])
    // The third is the follow-up's own turn.
    expect(userTexts(fake.requests[2]!.body)).toEqual([
      'run the slow command',
      'not that file, the other one',
      'then write the notes',
    ])
    const dir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!)
    const log = readFileSync(join(dir, readdirSync(dir)[0]!), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line))
    const steer = log.find((event) => event.type === 'user/message' && event.data.message.source === 'steer')
    const starts = log.filter((event) => event.type === 'turn/start')
    expect(starts).toHaveLength(2)
    expect(steer.seq).toBeGreaterThan(log.find((event) => event.type === 'tool/result').seq)
    expect(steer.seq).toBeLessThan(starts[1].seq)

    // The call back, as bytes on the terminal: the turn ended while the other window had the focus.
    await until(() => readFileSync(bytes, 'latin1').includes('\u001b]9;'), 'the OSC 9 bytes', 10_000, screen)
    const written = readFileSync(bytes, 'latin1')
    expect(written).toContain('\u001b[?1004h')
    expect(written).toContain('\u001b]9;Keel is done: The turn ended, over to you.\u0007')
    // OSC 777, then the bell itself.
    expect(written).toContain('\u001b]777;notify;Keel is done;The turn ended, over to you.\u0007\u0007')
    // Exactly one call back: the first turn handed over to the follow-up, not to the person.
    expect(written.split('\u001b]9;').length - 1).toBe(1)

    // `keel -c` shows the steering message where it landed.
    tmux.key('one', 'C-d')
    await until(() => tmux.exitStatus('one') !== undefined, 'keel to exit', 15_000, screen)
    tmux.start('two', keel('-c'))
    const two = () => tmux.screen('two')
    await until(() => two().includes('Follow-up done'), 'the resumed transcript', 60_000, two)
    const lines = two().split('\n')
    const at = (text: string) => lines.findIndex((line) => line.includes(text))
    expect(at('sleep 4')).toBeLessThan(at('not that file, the other one'))
    expect(lines[at('not that file, the other one') + 1]).toContain('(sent while the agent worked)')
    expect(at('not that file, the other one')).toBeLessThan(at('Steered: using the other file.'))
    expect(at('Steered: using the other file.')).toBeLessThan(at('then write the notes'))
  },
  180_000,
)
