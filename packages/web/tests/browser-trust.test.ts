// `keel serve` in a folder the person has not trusted: the page offers trust the way the TUI asks (the same words,
// two numbered answers), shows the held-back line as a notice, and a yes records trust as `keel trust` does. The real
// binary, its default composition, headless Chromium.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web trust browser test')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-trust-'))
const home = join(scratch, 'home')
let cwd = ''
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('trust on the web page', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    cwd = join(scratch, 'project')
    mkdirSync(join(cwd, '.git'), { recursive: true })
    mkdirSync(join(cwd, '.keel'))
    writeFileSync(join(cwd, '.keel', 'settings.json'), JSON.stringify({ permissions: { allow: ['bash(make:*)'] } }))
    cwd = realpathSync(cwd)
    writeFileSync(join(scratch, 'script.json'), JSON.stringify({ steps: [{ text: 'Hello.' }] }))
    const args = ['--port', '0', '--model', `scripted/${join(scratch, 'script.json')}`, '--cwd', cwd]
    served = await serve(args, { KEEL_HOME: home }, cwd)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('the page asks; "continue without" keeps it untrusted; "trust" records it and the offer goes', async () => {
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    await page.goto(served!.url)
    const offer = page.getByTestId('trust-offer')
    await expect.poll(() => offer.count(), { timeout: 20_000 }).toBe(1)
    const text = await offer.textContent()
    expect(text).toContain(`This folder is not trusted yet: ${cwd}.`)
    expect(text).toContain('Its project files ask for: permissions.allow.')
    expect(text).toContain(join(cwd, '.keel', 'settings.json'))
    expect(await page.getByTestId('trust-yes').textContent()).toBe('1. Trust this folder')
    // The held-back line reaches the page as a notice too (every door shows it).
    await expect
      .poll(() => page.getByTestId('notice-line').allTextContents(), { timeout: 20_000 })
      .toContainEqual(expect.stringContaining(`${cwd} is not trusted: held back permissions.allow`))

    await page.getByTestId('trust-no').click()
    expect(await offer.count()).toBe(0)
    expect(existsSync(join(home, 'trust.json'))).toBe(false)

    await page.reload()
    await expect.poll(() => offer.count(), { timeout: 20_000 }).toBe(1)
    await page.getByTestId('trust-yes').click()
    await expect
      .poll(() => page.getByTestId('trust-done').textContent(), { timeout: 20_000 })
      .toMatch(/^Trusted .*: its allow rules, commands and MCP servers apply from now on; .*starts again\.$/)
    expect(JSON.parse(readFileSync(join(home, 'trust.json'), 'utf8')).folders).toHaveProperty([cwd])
    await page.reload()
    await expect.poll(() => page.getByTestId('trust-offer').count(), { timeout: 5_000 }).toBe(0)
  })
})
