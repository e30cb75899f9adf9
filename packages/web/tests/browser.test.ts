// The web UI end to end: the real `keel serve` binary with the scripted model, driven from headless Chromium.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, REPO, type Served, serveScripted } from './serve-support.ts'
import { writeComposition } from '../../../test-support/composition.ts'

import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('Chromium', CHROMIUM !== undefined, 'the web UI browser tests')

const XSS = '<img src=x onerror=alert(1)>'
const ARTIFACTS = join(REPO, 'test-artifacts')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-e2e-'))
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('web UI in headless Chromium', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    const todos = (b: string, c: string) => [
      { content: 'Read the code', status: b === 'start' ? 'in_progress' : 'completed' },
      { content: 'Write the fix', status: b === 'start' ? 'pending' : 'in_progress' },
      { content: 'Update the docs', status: c },
      { content: XSS, status: 'pending' },
    ]
    // The turn waits at two gates (bash calls that return once the test creates a file), so each state the test
    // looks at stays on screen until the test has seen it: no step depends on how long another takes.
    const gate = (name: string) => ({
      name: 'bash',
      arguments: { command: `while [ ! -e ${name} ]; do sleep 0.05; done; echo ${name} open` },
    })
    writeFileSync(
      join(scratch, 'script.json'),
      JSON.stringify({
        steps: [
          {
            text: 'I will plan this first.',
            delayMs: 40,
            toolCalls: [{ name: 'todo_write', arguments: { todos: todos('start', 'pending') } }],
          },
          { toolCalls: [gate('gate-1')] },
          { toolCalls: [{ name: 'todo_write', arguments: { todos: todos('next', 'in_progress') } }] },
          { toolCalls: [gate('gate-2')] },
          {
            text: 'Both tasks are under way and the checks look good so far, so I am wrapping up this turn now.',
            delayMs: 150,
          },
          { text: 'Here is the summary you asked for.', delayMs: 60 },
        ],
      }),
    )
    // Parallel in-progress tasks are allowed here so the row shows its `+n`.
    writeComposition(join(scratch, 'keel.yml'), [
      '- id: todo',
      "  name: '@keel/todo'",
      '  config: { allowParallelInProgress: true }',
    ])
    served = await serveScripted(scratch, scratch, join(scratch, 'home'))
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('a plan appears and updates live, survives a reload from the tail page, renders markup as text, and clears on the next turn', async () => {
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    const dialogs: string[] = []
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    const pageErrors: string[] = []
    page.on('pageerror', (error) => pageErrors.push(error.message))
    // Single-message history pages, so after the turn the plan's write lies outside the tail page.
    const url = new URL(served!.url)
    url.searchParams.set('messages', '1')
    await page.goto(url.href)
    // The token came in the fragment: the page moved it to this tab's sessionStorage and out of the address bar;
    // other parameters stay. No cookie exists for any port to receive.
    expect(new URL(page.url()).hash).not.toContain('token')
    expect(new URL(page.url()).searchParams.get('messages')).toBe('1')
    expect(await context!.cookies()).toEqual([])
    expect(await page.evaluate(() => document.cookie)).toBe('')
    expect(await page.evaluate(() => sessionStorage.getItem('keel-token'))).toBe(served!.token)

    const panel = page.getByTestId('todo-panel')
    const counts = page.getByTestId('todo-counts')
    await page.getByTestId('composer-input').fill('Plan the release')
    await page.getByTestId('send').click()

    await expect.poll(() => counts.textContent(), { timeout: 15_000 }).toBe('1 in progress · 3 pending')
    const summaries = page.getByTestId('todo-row-summary')
    await expect.poll(() => summaries.first().textContent()).toBe('0/4 completed · Read the code')
    expect(await page.getByTestId('todo-row-suffix').count()).toBe(0)

    writeFileSync(join(scratch, 'gate-1'), '')
    await expect.poll(() => counts.textContent(), { timeout: 15_000 }).toBe('1 completed · 2 in progress · 1 pending')
    await expect.poll(() => summaries.nth(1).textContent()).toBe('1/4 completed · Write the fix')
    expect(await page.getByTestId('todo-row-suffix').textContent()).toBe('+1')
    const items = panel.getByTestId('todo-item')
    expect(await items.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-status')))).toEqual([
      'completed',
      'in_progress',
      'in_progress',
      'pending',
    ])
    // Three distinct glyphs.
    const glyphs = await items.evaluateAll((nodes) => nodes.map((node) => node.querySelector('.glyph svg')!.innerHTML))
    expect(new Set(glyphs).size).toBe(3)
    // Markup in a todo is text: no element made of it, no script run.
    expect(await items.nth(3).locator('.todo-content').textContent()).toBe(XSS)
    expect(await panel.locator('img').count()).toBe(0)
    expect(await page.locator('img[src="x"]').count()).toBe(0)
    mkdirSync(ARTIFACTS, { recursive: true })
    await panel.screenshot({ path: join(ARTIFACTS, 'web-todo-panel.png'), animations: 'disabled', caret: 'hide' })
    await page.screenshot({ path: join(ARTIFACTS, 'web-ui.png'), animations: 'disabled', caret: 'hide' })

    // Reload while the turn is still running (held at the second gate): the plan is back from the tail page.
    await page.reload()
    await expect.poll(() => counts.textContent(), { timeout: 15_000 }).toBe('1 completed · 2 in progress · 1 pending')
    await expect.poll(() => page.getByTestId('cancel').count(), { timeout: 15_000 }).toBe(1) // the turn is still running
    writeFileSync(join(scratch, 'gate-2'), '')
    await expect.poll(() => page.getByTestId('send').count(), { timeout: 15_000 }).toBe(1) // the turn has ended

    // Reload after the turn: the tail page (one message) no longer holds any todo_write call, yet the plan stands.
    await page.reload()
    await expect.poll(() => counts.textContent(), { timeout: 15_000 }).toBe('1 completed · 2 in progress · 1 pending')
    expect(await page.locator('[data-tool="todo_write"]').count()).toBe(0)
    expect(await page.getByText('Load earlier messages').count()).toBe(1)

    // The next turn clears the plan as soon as it starts.
    await page.getByTestId('composer-input').fill('Summarize it')
    await page.getByTestId('send').click()
    await expect.poll(() => panel.count(), { timeout: 15_000 }).toBe(0)
    await expect
      .poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 15_000 })
      .toBe('Here is the summary you asked for.')
    expect(await panel.count()).toBe(0)

    expect(dialogs).toEqual([])
    expect(pageErrors).toEqual([])
  }, 120_000)

  test('a reload keeps the token; a bare new tab shows the gate; no other local port ever receives the token', async () => {
    // Another local server, as a dev server on another port would be: it records every request it gets.
    const seen: { url?: string; cookie?: string; token?: string }[] = []
    const other = createServer((req, res) => {
      seen.push({ url: req.url, cookie: req.headers.cookie, token: req.headers['x-keel-token'] as string | undefined })
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>dev server</title><p>hello</p>')
    })
    await new Promise<void>((done) => other.listen(0, '127.0.0.1', done))
    const otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
    const tab = await context!.newPage()
    const pageErrors: string[] = []
    tab.on('pageerror', (error) => pageErrors.push(error.message))
    try {
      await tab.goto(served!.url)
      await expect.poll(() => tab.getByTestId('session-item').count(), { timeout: 15_000 }).toBeGreaterThan(0)
      expect(await tab.getByTestId('gate').count()).toBe(0)
      await tab.reload()
      await expect.poll(() => tab.getByTestId('session-item').count(), { timeout: 15_000 }).toBeGreaterThan(0)
      await tab.getByTestId('session-item').first().click()
      await expect.poll(() => tab.getByTestId('assistant-message').count(), { timeout: 15_000 }).toBeGreaterThan(0)
      expect(await tab.getByTestId('all-banner').count()).toBe(0)
      // The same browser visits the other port: nothing of the token goes with the request, and its page cannot
      // read this origin's storage.
      await tab.goto(`${otherOrigin}/some-dev-server-page`)
      expect(seen.length).toBeGreaterThan(0)
      for (const request of seen) {
        expect(JSON.stringify(request)).not.toContain(served!.token)
        expect(request.cookie).toBeUndefined()
      }
      expect(await tab.evaluate(() => sessionStorage.getItem('keel-token'))).toBeNull()
      // A new tab of the bare address has no token: the gate, not the sessions.
      const bare = await context!.newPage()
      await bare.goto(`${served!.origin}/`)
      await expect.poll(() => bare.getByTestId('gate').count(), { timeout: 15_000 }).toBe(1)
      expect(await bare.getByTestId('session-item').count()).toBe(0)
      await bare.close()
    } finally {
      await tab.close()
      other.closeAllConnections()
      await new Promise((done) => other.close(done))
    }
    expect(pageErrors).toEqual([])
  }, 60_000)
  test('a session link that lands while the page loads still opens that session', async () => {
    const first = await context!.newPage()
    await first.goto(served!.url)
    await expect.poll(() => first.getByTestId('session-item').count(), { timeout: 15_000 }).toBeGreaterThan(0)
    await first.getByTestId('session-item').first().click()
    await expect.poll(() => new URL(first.url()).hash, { timeout: 15_000 }).toMatch(/^#s=/)
    const hash = new URL(first.url()).hash
    await first.close()
    // The address becomes `#s=…` after the app's first render read it and before its hashchange listener exists
    // (the second one registered; the token's is the first), as when a link is opened into a tab still loading:
    // that change's event went to no one, so the app must read the address again once it listens.
    const tab = await context!.newPage()
    await tab.addInitScript((late: string) => {
      const add = window.addEventListener.bind(window)
      let seen = 0
      window.addEventListener = ((
        type: string,
        ...rest: Parameters<typeof add> extends [unknown, ...infer R] ? R : never
      ) => {
        if (type === 'hashchange' && ++seen === 2) history.replaceState(null, '', late)
        return add(type, ...rest)
      }) as typeof window.addEventListener
    }, hash)
    const pageErrors: string[] = []
    tab.on('pageerror', (error) => pageErrors.push(error.message))
    try {
      await tab.goto(served!.url)
      await expect.poll(() => tab.getByTestId('assistant-message').count(), { timeout: 15_000 }).toBeGreaterThan(0)
      expect(new URL(tab.url()).hash).toBe(hash)
    } finally {
      await tab.close()
    }
    expect(pageErrors).toEqual([])
  }, 60_000)
})

/** Keeps the README screenshot in step with the test's: run with KEEL_UPDATE_DOCS=1 to copy it. */
afterAll(() => {
  if (process.env.KEEL_UPDATE_DOCS === '1' && existsSync(join(ARTIFACTS, 'web-todo-panel.png'))) {
    copyFileSync(join(ARTIFACTS, 'web-todo-panel.png'), join(REPO, 'docs/web-todo-panel.png'))
  }
})
