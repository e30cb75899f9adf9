// The transcript's renderers and the phone layout end to end: the real `keel serve` with a scripted model whose
// answer has Markdown, a code fence, a table and raw HTML, plus a bash call and an edit, driven from headless Chromium.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { writeDemo } from '../scripts/demo-session.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { chromiumOptions, serve, type Served } from './serve-support.ts'

import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('Chromium', CHROMIUM !== undefined, 'the web renderer browser tests')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-render-'))
let served: Served | undefined
let browser: Browser | undefined

afterAll(async () => {
  await browser?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** Opens the page, runs the demo turn once and waits for its last reply; later tests reopen the session. */
async function openPage(width: number, height: number): Promise<{ page: Page; dialogs: string[]; errors: string[] }> {
  const context = await browser!.newContext({ viewport: { width, height } })
  const page = await context.newPage()
  const dialogs: string[] = []
  const errors: string[] = []
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(served!.url)
  return { page, dialogs, errors }
}

describe.skipIf(skip)('transcript renderers in headless Chromium', () => {
  let sessionHash = ''

  beforeAll(async () => {
    await ensureClientBuilt()
    const demo = writeDemo(scratch)
    served = await serve(
      ['--port', '0', '--model', demo.model, '--cwd', scratch, '--config', demo.config],
      { KEEL_HOME: join(scratch, 'home') },
      scratch,
    )
    const { chromium } = await import('playwright-core')
    browser = await chromium.launch(chromiumOptions())
  }, 180_000)

  test('Markdown, highlighted code, coloured diffs, output previews and usage on a desktop page', async () => {
    const { page, dialogs, errors } = await openPage(1100, 800)
    await page.getByTestId('composer-input').fill('Let greet take a name')
    await page.getByTestId('send').click()
    const reply = page.getByTestId('assistant-message').last().getByTestId('markdown')
    await expect.poll(() => reply.locator('h2').count(), { timeout: 30_000 }).toBe(1)
    await expect.poll(() => page.getByTestId('send').count(), { timeout: 30_000 }).toBe(1) // the turn has ended
    sessionHash = new URL(page.url()).hash

    // Markdown elements.
    expect(await reply.locator('h2').textContent()).toBe('What changed')
    expect(await reply.locator('strong').first().textContent()).toBe('name')
    expect(await reply.locator('table th').allTextContents()).toEqual(['file', 'change', 'tests'])
    expect(await reply.locator('blockquote').count()).toBe(1)
    expect(await reply.locator('ul > li').count()).toBe(2)
    const link = reply.locator('a')
    expect(await link.getAttribute('href')).toBe('https://example.com/docs')
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer')
    expect(await link.getAttribute('target')).toBe('_blank')
    // Raw HTML made no element and ran nothing; it reads as text.
    expect(await page.locator('.transcript img, .transcript script').count()).toBe(0)
    expect(await reply.locator('blockquote').textContent()).toContain(
      '<img src=x onerror=alert(1)> and <script>alert(2)</script>',
    )
    // The fence is highlighted once the highlighter chunk has loaded.
    const keyword = reply.locator('[data-testid="code-block"] code[data-highlighted="yes"] .hljs-keyword').first()
    await expect.poll(() => keyword.count(), { timeout: 15_000 }).toBe(1)
    expect(await keyword.textContent()).toBe('export')

    // One label per tool row.
    const edit = page.locator('[data-testid="tool-row"][data-tool="edit"]')
    expect(await edit.locator('summary').textContent()).toBe('editsrc/greet.ts')
    // The edit's diff is coloured and numbered, visible without a click.
    const added = edit.locator('tr.diff-add')
    const removed = edit.locator('tr.diff-del')
    expect(await added.count()).toBe(2)
    expect(await removed.count()).toBe(2)
    expect(await added.first().isVisible()).toBe(true)
    const background = (row: typeof added) => row.first().evaluate((el) => getComputedStyle(el).backgroundColor)
    const [addBg, delBg] = [await background(added), await background(removed)]
    expect(addBg).not.toBe('rgba(0, 0, 0, 0)')
    expect(delBg).not.toBe('rgba(0, 0, 0, 0)')
    expect(addBg).not.toBe(delBg)
    expect(await removed.first().locator('td').first().textContent()).toBe('1')
    // The bash call's last lines show without a click.
    const preview = page.locator('[data-testid="tool-row"][data-tool="bash"] [data-testid="tool-preview"]')
    expect(await preview.isVisible()).toBe(true)
    expect(await preview.textContent()).toMatch(/tests: 3 passed\ndone in 1\.2 s\n\[exit code 0 · [\d.]+ s\]$/)

    // The header: the model, tokens used and the share of the 200k window (compaction config) in use.
    expect(await page.getByTestId('usage-model').textContent()).toBe('demo.json')
    // 14,510 + 16,020 + 16,820 reported tokens; the context is the last reply's 16,820 of 200,000.
    expect(await page.getByTestId('usage-tokens').textContent()).toBe('47k tok')
    expect(await page.getByTestId('usage-context').textContent()).toBe('8% context')

    expect(dialogs).toEqual([])
    expect(errors).toEqual([])
    await page.context().close()
  }, 120_000)

  test('at 390×844 nothing scrolls sideways, Send stays on screen and the session list is behind a button', async () => {
    const { page, dialogs, errors } = await openPage(390, 844)
    await page.goto(`${served!.url}&${sessionHash.replace(/^#/, '')}`)
    const reply = page.getByTestId('assistant-message').last().getByTestId('markdown')
    await expect
      .poll(() => reply.locator('[data-testid="code-block"] code[data-highlighted="yes"]').count(), { timeout: 30_000 })
      .toBe(1)
    await expect.poll(() => page.locator('tr.diff-add').count()).toBe(2)
    await page.getByTestId('composer-input').fill('one more thing')

    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(390)
    // The long code line scrolls inside its block instead.
    const pre = reply.locator('[data-testid="code-block"] pre')
    expect(await pre.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true)
    const send = await page.getByTestId('send').boundingBox()
    expect(send).not.toBeNull()
    expect(send!.x).toBeGreaterThanOrEqual(0)
    expect(send!.x + send!.width).toBeLessThanOrEqual(390)
    expect(send!.y + send!.height).toBeLessThanOrEqual(844)
    expect(await page.getByTestId('send').isEnabled()).toBe(true)
    // The plan stays on screen and readable: its rows are not clipped sideways.
    const plan = await page.getByTestId('todo-panel').boundingBox()
    expect(plan!.x + plan!.width).toBeLessThanOrEqual(390)
    expect(await page.getByTestId('todo-panel').getByTestId('todo-item').first().isVisible()).toBe(true)
    // The output preview needs no click here either.
    expect(
      await page.locator('[data-testid="tool-row"][data-tool="bash"] [data-testid="tool-preview"]').isVisible(),
    ).toBe(true)

    // The session list is hidden until the header button opens it; picking a session closes it again.
    const list = page.getByTestId('session-item')
    expect(await list.first().isVisible()).toBe(false)
    await page.getByTestId('nav-toggle').click()
    await expect.poll(() => list.first().isVisible()).toBe(true)
    expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(390)
    await list.first().click()
    await expect.poll(() => list.first().isVisible()).toBe(false)

    expect(dialogs).toEqual([])
    expect(errors).toEqual([])
    await page.context().close()
  }, 120_000)
})
