// The page's call back follows the person's settings (`notify`, `notifyWhen`, sent in the host's hello frame), in
// headless Chromium against two real `keel serve` processes: `desktop` + `always` shows a notification and the title
// badge even while the tab is focused; `bell` + `always` is the badge alone (a page has no bell).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web call-back settings browser test')
const scratch = mkdtempSync(join(tmpdir(), 'keel-web-notify-'))
const servers: Record<string, Served> = {}
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  for (const served of Object.values(servers)) await served.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** A `keel serve` whose KEEL_HOME settings say `settings`, with a model that answers once. */
async function serveWith(name: string, settings: Record<string, string>): Promise<Served> {
  const home = join(scratch, name, 'home')
  const cwd = join(scratch, name, 'project')
  mkdirSync(join(cwd, '.git'), { recursive: true })
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, 'settings.json'), JSON.stringify(settings))
  writeFileSync(join(scratch, name, 'script.json'), JSON.stringify({ steps: [{ text: 'Done here.' }] }))
  const args = ['--port', '0', '--model', `scripted/${join(scratch, name, 'script.json')}`, '--cwd', cwd, '--trust']
  return serve(args, { KEEL_HOME: home }, cwd)
}

/** Opens the page with notifications allowed, recording each one the page shows (the real Notification, subclassed). */
async function open(served: Served): Promise<Page> {
  await context!.grantPermissions(['notifications'], { origin: served.origin })
  const page = await context!.newPage()
  await page.addInitScript(() => {
    const shown: { title: string; body?: string }[] = []
    ;(window as unknown as { shown: typeof shown }).shown = shown
    const Real = window.Notification
    window.Notification = class extends Real {
      constructor(title: string, options?: NotificationOptions) {
        super(title, options)
        shown.push({ title, body: options?.body })
      }
    } as typeof Notification
  })
  await page.goto(served.url)
  return page
}

async function promptAndWait(page: Page): Promise<void> {
  await page.getByTestId('composer-input').fill('say done')
  await page.getByTestId('send').click()
  await expect.poll(() => page.getByText('Done here.').count(), { timeout: 20_000 }).toBe(1)
}

const shown = (page: Page) => page.evaluate(() => (window as unknown as { shown: unknown[] }).shown)

describe.skipIf(skip)("the page's call back follows notify and notifyWhen", () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    const [desktop, bell] = await Promise.all([
      serveWith('desktop', { notify: 'desktop', notifyWhen: 'always' }),
      serveWith('bell', { notify: 'bell', notifyWhen: 'always' }),
    ])
    servers.desktop = desktop
    servers.bell = bell
    context = await launchBrowser(join(scratch, 'profile'), { width: 1000, height: 700 })
  }, 180_000)

  test('desktop, always: a notification and the badge while the tab is focused', async () => {
    const page = await open(servers.desktop!)
    await page.bringToFront()
    expect(await page.evaluate(() => document.hasFocus() && document.visibilityState === 'visible')).toBe(true)
    await promptAndWait(page)
    await expect
      .poll(() => shown(page), { timeout: 10_000 })
      .toEqual([{ title: 'Keel is done', body: 'The turn ended, over to you.' }])
    await expect.poll(() => page.title(), { timeout: 10_000 }).toMatch(/^\(1\) /)
    // Looked at: the next key clears it.
    await page.keyboard.press('Shift')
    await expect.poll(() => page.title(), { timeout: 10_000 }).not.toMatch(/^\(\d+\) /)
    await page.close()
  }, 60_000)

  test('bell, always: the badge only, no notification', async () => {
    const page = await open(servers.bell!)
    await page.bringToFront()
    await promptAndWait(page)
    await expect.poll(() => page.title(), { timeout: 10_000 }).toMatch(/^\(1\) /)
    expect(await shown(page)).toEqual([])
    await page.close()
  }, 60_000)
})
