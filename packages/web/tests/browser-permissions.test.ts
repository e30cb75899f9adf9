// Approval cards end to end: the real `keel serve` in `ask` mode with the scripted model, two tabs of headless
// Chromium answering, the decisions checked on the session log.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, REPO, type Served, serveScripted } from './serve-support.ts'
import { writeComposition } from '../../../test-support/composition.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web approval browser tests')

const ARTIFACTS = join(REPO, 'test-artifacts')
const scratch = mkdtempSync(join(tmpdir(), 'keel-web-asks-'))
const home = join(scratch, 'home')
const work = join(scratch, 'work')
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** The decisions on the session's log file, as `callId decision scope`. */
function loggedDecisions(sessionId: string): string[] {
  const dir = join(home, 'sessions')
  for (const slug of readdirSync(dir)) {
    const file = join(dir, slug, `${sessionId}.jsonl`)
    if (!existsSync(file)) continue
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === 'permission/decision')
      .map((event) => `${event.data.callId} ${event.data.decision} ${event.data.scope}`)
  }
  return []
}

/** The mode changes on the session's log file, as `previous→mode`. */
function loggedModes(sessionId: string): string[] {
  const dir = join(home, 'sessions')
  for (const slug of readdirSync(dir)) {
    const file = join(dir, slug, `${sessionId}.jsonl`)
    if (!existsSync(file)) continue
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === 'permission/mode')
      .map((event) => `${event.data.previous}→${event.data.mode}`)
  }
  return []
}

describe.skipIf(skip)('approval cards in headless Chromium', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    mkdirSync(work, { recursive: true })
    writeFileSync(
      join(scratch, 'script.json'),
      JSON.stringify({
        steps: [
          {
            text: 'Cleaning up first.',
            toolCalls: [{ id: 'call-rm', name: 'bash', arguments: { command: 'rm -rf build <b>not bold</b>' } }],
          },
          { toolCalls: [{ id: 'call-make', name: 'bash', arguments: { command: 'echo made > made.txt' } }] },
          { text: 'Done asking.' },
        ],
      }),
    )
    writeComposition(join(scratch, 'keel.yml'), [
      "- { id: permissions, name: '@keel/permissions', config: { mode: ask } }",
    ])
    served = await serveScripted(scratch, work, home)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('both tabs show the card, the first answer decides, a reload shows a waiting card again, decisions render', async () => {
    const pageErrors: string[] = []
    const watch = (page: Page) => page.on('pageerror', (error) => pageErrors.push(error.message))
    const a: Page = context!.pages()[0] ?? (await context!.newPage())
    watch(a)
    await a.goto(served!.url)
    await a.getByTestId('composer-input').fill('Tidy the build')
    await a.getByTestId('send').click()

    const cardA = a.getByTestId('approval-card')
    await expect.poll(() => cardA.count(), { timeout: 20_000 }).toBe(1)
    expect(await cardA.getByTestId('approval-detail').textContent()).toBe('rm -rf build <b>not bold</b>')
    expect(await cardA.locator('b').count()).toBe(0) // markup in a command is text
    // `>not` redirects to a file, which no rule can allow: the card offers no "always" and no "this session".
    expect(await cardA.getByTestId('allow-always').count()).toBe(0)
    expect(await cardA.getByTestId('allow-session').count()).toBe(0)
    const sessionId = /#s=([\w-]+)/.exec(a.url())![1]!

    // A second tab opened now gets the waiting ask from the tail page.
    const b = await context!.newPage()
    watch(b)
    const url = new URL(served!.url)
    // A new tab has no token of its own (sessionStorage is per tab): the printed URL gives it one.
    url.hash = `token=${served!.token}&s=${sessionId}`
    await b.goto(url.href)
    const cardB = b.getByTestId('approval-card')
    await expect.poll(() => cardB.count(), { timeout: 20_000 }).toBe(1)
    mkdirSync(ARTIFACTS, { recursive: true })
    await cardA.screenshot({ path: join(ARTIFACTS, 'web-approval-card.png'), animations: 'disabled', caret: 'hide' })

    // Tab A denies: the card leaves both tabs and both rows say so.
    await cardA.getByTestId('deny').click()
    for (const page of [a, b]) {
      await expect
        .poll(() => page.getByTestId('permission-decision').first().textContent(), { timeout: 20_000 })
        .toBe('✗ denied once by the user')
    }

    // The next ask: tab A reloads while it waits and shows it again; tab B allows it.
    await expect.poll(() => cardB.count(), { timeout: 20_000 }).toBe(1)
    expect(await cardB.getByTestId('approval-detail').textContent()).toBe('echo made > made.txt')
    await a.reload()
    await expect.poll(() => cardA.count(), { timeout: 20_000 }).toBe(1)
    expect(await cardA.getByTestId('approval-detail').textContent()).toBe('echo made > made.txt')
    await cardB.getByTestId('allow-once').click()
    for (const page of [a, b]) {
      await expect.poll(() => page.getByTestId('approval-card').count(), { timeout: 20_000 }).toBe(0)
      await expect
        .poll(() => page.getByTestId('permission-decision').allTextContents(), { timeout: 20_000 })
        .toEqual(['✗ denied once by the user', '✓ allowed once by the user'])
      await expect
        .poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 20_000 })
        .toBe('Done asking.')
    }

    expect(loggedDecisions(sessionId)).toEqual(['call-rm deny once', 'call-make allow once'])
    expect(readFileSync(join(work, 'made.txt'), 'utf8')).toBe('made\n')

    // The mode control in the header: tab A picks auto; tab B's control follows; the change is on the log.
    expect(await a.getByTestId('mode-control').inputValue()).toBe('ask')
    expect(await a.getByTestId('mode-control').locator('option').allTextContents()).toEqual([
      'ask mode',
      'auto mode',
      'read-only mode',
      'plan mode',
    ])
    await a.getByTestId('mode-control').selectOption('auto')
    await expect.poll(() => b.getByTestId('mode-control').inputValue(), { timeout: 20_000 }).toBe('auto')
    await expect.poll(() => loggedModes(sessionId), { timeout: 20_000 }).toEqual(['ask→auto'])
    expect(pageErrors).toEqual([])
  }, 120_000)
})
