// The composer during a turn, in headless Chromium against `keel serve` (the real binary, a scripted model): while a
// `sleep` runs, one tab steers and another sends a follow-up at the same moment; both arrive once each, in order —
// the steering in the running turn, the follow-up as the next turn — and the queued lines show, then go. Then a
// queued prompt is taken back into the composer, before what is typed there, and never reaches the model.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web steering browser test')
const scratch = mkdtempSync(join(tmpdir(), 'keel-web-steer-'))
const home = join(scratch, 'home')
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('the composer while a turn runs', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    const cwd = join(scratch, 'project')
    mkdirSync(join(cwd, '.git'), { recursive: true })
    const steps = [
      { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 4' } }] },
      { text: 'Steered answer.' },
      { text: 'Follow-up answer.' },
      { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 4' } }] },
      { text: 'Second answer.' },
    ]
    writeFileSync(join(scratch, 'script.json'), JSON.stringify({ steps }))
    const args = ['--port', '0', '--model', `scripted/${join(scratch, 'script.json')}`, '--cwd', cwd, '--trust']
    served = await serve([...args, '--allow', 'bash'], { KEEL_HOME: home }, cwd)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('two tabs at once: steering and a follow-up, each once, in order', async () => {
    const one = context!.pages()[0] ?? (await context!.newPage())
    await one.goto(served!.url)
    await one.getByTestId('composer-input').fill('run the slow command')
    await one.getByTestId('send').click()
    await expect.poll(() => one.getByTestId('cancel').count(), { timeout: 20_000 }).toBe(1)
    // A new tab needs the printed address (the token rides in its fragment), with the session after it.
    const session = new URL(one.url()).hash.slice(1)
    const two = await context!.newPage()
    await two.goto(`${served!.url}&${session}`)
    await expect.poll(() => two.getByTestId('cancel').count(), { timeout: 20_000 }).toBe(1)
    await one.getByTestId('composer-input').fill('steer from tab one')
    await two.getByTestId('composer-input').fill('follow up from tab two')
    await Promise.all([one.getByTestId('steer').click(), two.getByTestId('follow-up').click()])
    await expect
      .poll(() => one.getByTestId('queued-item').allTextContents(), { timeout: 10_000 })
      .toEqual(
        expect.arrayContaining([
          'After the running tool calls. steer from tab one take back to edit',
          'As the next turn. follow up from tab two take back to edit',
        ]),
      )
    await expect.poll(() => one.getByText('Follow-up answer.').count(), { timeout: 30_000 }).toBe(1)
    await expect.poll(() => one.getByTestId('queued-item').count(), { timeout: 10_000 }).toBe(0)
    const dir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!)
    const log = readFileSync(join(dir, readdirSync(dir)[0]!), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line))
    const users = log
      .filter((event) => event.type === 'user/message')
      .map((event) => [event.data.message.source ?? 'user', event.data.message.content[0].text])
    expect(users).toEqual([
      ['user', 'run the slow command'],
      ['steer', 'steer from tab one'],
      ['user', 'follow up from tab two'],
    ])
    expect(log.filter((event) => event.type === 'turn/start')).toHaveLength(2)
  }, 90_000)

  test('a queued prompt taken back comes into the composer and is never delivered', async () => {
    const page = context!.pages()[0]!
    await page.getByTestId('composer-input').fill('run it again')
    await page.getByTestId('send').click()
    await expect.poll(() => page.getByTestId('cancel').count(), { timeout: 20_000 }).toBe(1)
    await page.getByTestId('composer-input').fill('take <b>me</b> back')
    await page.getByTestId('follow-up').click()
    // Escaped as ever: the markup is the text.
    await expect
      .poll(() => page.getByTestId('queued-item').allTextContents(), { timeout: 10_000 })
      .toEqual(['As the next turn. take <b>me</b> back take back to edit'])
    await page.getByTestId('composer-input').fill('typed meanwhile')
    await page.getByTestId('queued-take').click()
    await expect.poll(() => page.getByTestId('queued-item').count(), { timeout: 10_000 }).toBe(0)
    await expect
      .poll(() => page.getByTestId('composer-input').inputValue(), { timeout: 10_000 })
      .toBe('take <b>me</b> back\ntyped meanwhile')
    await expect.poll(() => page.getByText('Second answer.').count(), { timeout: 30_000 }).toBe(1)
    await expect.poll(() => page.getByTestId('cancel').count(), { timeout: 10_000 }).toBe(0)
    const dir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!)
    const log = readFileSync(join(dir, readdirSync(dir)[0]!), 'utf8')
    expect(log).toContain('run it again')
    expect(log).not.toContain('take <b>me</b> back')
  }, 90_000)
})
