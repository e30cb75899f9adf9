// The composer's `!command` in headless Chromium over the real `keel serve`: it runs on the host through the bash
// tool (@keel/door/user-command), its run shows as a shell message in the transcript, and the model's next request
// carries it; a bare `!` is the one usage line every door says.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web !command browser test')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-command-'))
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('!command on the web page', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    const cwd = join(scratch, 'project')
    mkdirSync(join(cwd, '.git'), { recursive: true })
    // The scripted model answers only when its request holds the command's output.
    const steps = [{ when: 'web-marker-42', text: 'I saw web-marker-42.' }]
    writeFileSync(join(scratch, 'script.json'), JSON.stringify({ steps }))
    const args = ['--port', '0', '--model', `scripted/${join(scratch, 'script.json')}`, '--cwd', cwd, '--trust']
    served = await serve(args, { KEEL_HOME: join(scratch, 'home') }, cwd)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('runs on the host, shows as a shell message, and reaches the next request; a bare ! says how', async () => {
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    await page.goto(served!.url)
    const input = page.getByTestId('composer-input')
    await input.fill('!echo web-marker-$((6*7))')
    await input.press('Enter')
    const messages = page.getByTestId('user-message')
    await expect
      .poll(() => messages.allTextContents(), { timeout: 20_000 })
      .toEqual([expect.stringMatching(/echo web-marker-\$\(\(6\*7\)\)[\s\S]*web-marker-42/)])
    await input.fill('!')
    await input.press('Enter')
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 20_000 }).toMatch(/^Usage: !<command>/)
    await input.fill('what did I run?')
    await input.press('Enter')
    await expect
      .poll(() => page.getByTestId('assistant-message').allTextContents(), { timeout: 20_000 })
      .toEqual([expect.stringContaining('I saw web-marker-42.')])
  }, 90_000)
})
