// A plugin's notice on the page: `keel serve` (the real binary, its default composition) in a project whose
// .mcp.json names a server that cannot start. The warning is a banner in headless Chromium, and a page opened
// after it was said shows it too (the hello frame carries the run's notices); `keel serve` says it on stderr.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { FAULTY } from '../../mcp/tests/support.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web notice browser test')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-notices-'))
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('notices on the web page', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    const cwd = join(scratch, 'project')
    mkdirSync(join(cwd, '.git'), { recursive: true })
    const broken = { ...FAULTY, env: { FAULTY_FAIL_AT_START: '1' } }
    writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: { broken } }))
    writeFileSync(join(scratch, 'script.json'), JSON.stringify({ steps: [{ text: 'Hello.' }] }))
    // --trust: an untrusted folder's .mcp.json is held back and starts nothing (see cli/tests/trust.test.ts).
    const args = ['--port', '0', '--model', `scripted/${join(scratch, 'script.json')}`, '--cwd', cwd, '--trust']
    served = await serve(args, { KEEL_HOME: join(scratch, 'home') }, cwd)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test("a broken MCP server's warning is a banner, live and after a reload, and a line on serve's stderr", async () => {
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    await page.goto(served!.url)
    // keel serve starts its MCP servers at once: the banner is there before any prompt.
    const lines = page.getByTestId('notice-line')
    await expect
      .poll(() => lines.allTextContents(), { timeout: 20_000 })
      .toEqual([expect.stringMatching(/^mcp server broken failed to start: .*missing database url/)])
    await page.reload()
    await expect
      .poll(() => lines.allTextContents(), { timeout: 20_000 })
      .toEqual([expect.stringMatching(/^mcp server broken failed to start/)])
    expect(served!.stderr()).toMatch(/^keel: mcp server broken failed to start: .*missing database url/m)
  })
})
