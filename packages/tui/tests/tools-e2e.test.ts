// The tools of a working day in a real terminal (tmux) against the strict fake Anthropic server: a background job
// counted in the footer and listed by /jobs, an image attached by typing its path (the request carries it), /init
// writing AGENTS.md through `write` and asking before it would change it again, and Ctrl+C twice ending Keel and
// the job with it.
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { processRunning } from './support.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the end-to-end terminal test of jobs, images and /init')
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)

let cleanup: (() => Promise<void>) | undefined
afterAll(async () => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: jobs footer and /jobs, an @path image sent, /init, Ctrl+C twice kills the job',
  { timeout: 180_000 },
  async () => {
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    const fake: FakeProvider = await startFakeProvider([
      { toolCalls: [{ name: 'bash', arguments: { command: `sleep 300; echo ${marker}`, background: true } }] },
      { text: 'The job is running.' },
      { text: 'A single red pixel.' },
      { toolCalls: [{ name: 'write', arguments: { path: 'AGENTS.md', content: '# Agents\n\nRun the tests.\n' } }] },
      { text: 'Wrote AGENTS.md.' },
    ])
    const tmux = new Tmux()
    const home = mkdtempSync(join(tmpdir(), 'keel-tools-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-tools-cwd-'))
    mkdirSync(join(cwd, '.git'))
    writeFileSync(join(cwd, 'shot.png'), PNG)
    cleanup = async () => {
      tmux.dispose()
      await fake.close()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    const command = `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 ANTHROPIC_API_KEY=sk-ant-test ANTHROPIC_BASE_URL='${fake.url}' node '${join(REPO, 'bin/keel.js')}' --trust --allow bash --allow write --model anthropic/claude-sonnet-4-6; echo "[keel exited $?]"; sleep 600`
    const screen = () => tmux.screen('t')
    const has =
      (...parts: string[]) =>
      () =>
        parts.every((part) => screen().includes(part))

    tmux.start('t', command)
    await until(has('claude-sonnet-4-6', '─────'), 'the UI to start', 60_000, screen)

    tmux.type('t', 'start the job')
    tmux.key('t', 'Enter')
    await until(has('The job is running.', '· 1 job ·'), 'the footer to count the job', 30_000, screen)
    expect(processRunning(marker)).toBe(true)
    tmux.type('t', '/jobs')
    tmux.key('t', 'Enter')
    await until(() => new RegExp(`job-1 · \\d+s · sleep 300; echo ${marker}`).test(screen()), '/jobs', 10_000, screen)

    // A dragged file: the terminal pastes its path (bracketed paste), then a space.
    tmux.run('set-buffer', '-b', 'drag', `'${join(cwd, 'shot.png')}'`)
    tmux.run('paste-buffer', '-p', '-d', '-b', 'drag', '-t', 't')
    tmux.type('t', ' ')
    await until(has(`[image shot.png ${PNG.length} B]`), 'the dragged path to become its label', 10_000, screen)
    tmux.key('t', 'C-u')
    await until(() => !screen().includes(`[image shot.png ${PNG.length} B] `), 'the editor to clear', 10_000, screen)
    tmux.type('t', 'what is in @shot.png ')
    await until(has(`what is in [image shot.png ${PNG.length} B]`), 'the path to become its label', 10_000, screen)
    tmux.type('t', 'please')
    tmux.key('t', 'Enter')
    await until(has('A single red pixel.'), 'the answer about the image', 30_000, screen)
    const sent = fake.requests[2]!.body.messages.at(-1).content
    expect(sent.map(({ cache_control, ...block }: Record<string, unknown>) => block)).toEqual([
      { type: 'text', text: 'what is in please' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } },
    ])
    expect(screen()).toContain(`  [image shot.png ${PNG.length} B]`)

    // The answer is drawn as its message is logged; the turn ends just after.
    await new Promise((done) => setTimeout(done, 1000))
    tmux.type('t', '/init')
    tmux.key('t', 'Enter')
    await until(has('Wrote AGENTS.md.'), '/init to write AGENTS.md', 30_000, screen)
    expect(readFileSync(join(cwd, 'AGENTS.md'), 'utf8')).toBe('# Agents\n\nRun the tests.\n')
    expect(JSON.stringify(fake.requests[3]!.body.messages.at(-1))).toContain('Study this repository')
    await new Promise((done) => setTimeout(done, 1000))
    tmux.type('t', '/init')
    tmux.key('t', 'Enter')
    await until(has('AGENTS.md exists: let the model improve it?'), 'the question', 10_000, screen)
    await new Promise((done) => setTimeout(done, 600)) // Enter answers only after a pause in typing
    tmux.key('t', 'Enter')
    await until(has('AGENTS.md left as it is.'), 'No, the safe answer', 10_000, screen)
    expect(fake.requests).toHaveLength(5)

    tmux.key('t', 'C-c')
    tmux.key('t', 'C-c')
    await until(() => tmux.exitStatus('t') !== undefined, 'keel to exit on Ctrl+C twice', 15_000, screen)
    await until(() => !processRunning(marker), 'the job to be killed', 15_000, screen)
  },
)
