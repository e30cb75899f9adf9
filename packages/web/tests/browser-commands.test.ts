// Command files in the web composer: `keel serve` (the real binary) in a folder with a copied `.claude/commands`
// layout; headless Chromium types `/`, the composer offers the command with its description, Tab completes it,
// sending runs it, and the page shows the expansion (which is what lands on the log, with the command named); a
// PreToolUse hook's verdict is a row under the tool call it ran for.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web command files browser test')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-commands-'))
const home = join(scratch, 'home')
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('command files in the web composer', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    const cwd = join(scratch, 'project')
    mkdirSync(join(cwd, '.git'), { recursive: true })
    mkdirSync(join(cwd, '.claude/commands/frontend'), { recursive: true })
    writeFileSync(
      join(cwd, '.claude/commands/frontend/review.md'),
      '---\ndescription: Review a component carefully\nargument-hint: [file]\n---\nReview the component in $1 for accessibility.\n',
    )
    const steps = [
      { text: 'Reviewed the button.' },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo hooked' } }] },
      { text: 'Ran it.' },
    ]
    writeFileSync(join(scratch, 'script.json'), JSON.stringify({ steps }))
    // The person's own hook (claude-code's JSON answer): its verdict shows under the call it ran for.
    const allow = `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"echo is fine"}}'`
    mkdirSync(home, { recursive: true })
    writeFileSync(
      join(home, 'settings.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: allow }] }] } }),
    )
    const args = ['--port', '0', '--model', `scripted/${join(scratch, 'script.json')}`, '--cwd', cwd]
    served = await serve(args, { KEEL_HOME: home }, cwd)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('/ offers the command file, Tab completes it, sending runs its expansion; a hook shows under its call', async () => {
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    await page.goto(served!.url)
    const input = page.getByTestId('composer-input')
    await input.fill('/fro')
    const items = page.getByTestId('command-item')
    await expect
      .poll(() => items.allTextContents(), { timeout: 20_000 })
      .toEqual(['/frontend:review [file]Review a component carefully'])
    await input.press('Tab')
    expect(await input.inputValue()).toBe('/frontend:review ')
    await input.pressSequentially('src/button.tsx')
    expect(await items.count()).toBe(0)
    await page.getByTestId('send').click()
    await expect
      .poll(() => page.locator('.transcript').textContent(), { timeout: 20_000 })
      .toContain('Reviewed the button.')
    expect(await page.locator('.transcript').textContent()).toContain(
      'Review the component in src/button.tsx for accessibility.',
    )
    const dir = join(home, 'sessions')
    const folder = join(dir, readdirSync(dir)[0]!)
    const file = readdirSync(folder).find((f) => f.endsWith('.jsonl'))!
    const message = readFileSync(join(folder, file), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .find((e) => e.type === 'user/message').data.message
    expect(message.command).toBe('frontend:review')

    await input.fill('run it')
    await page.getByTestId('send').click()
    await expect
      .poll(() => page.getByTestId('hook-run').allTextContents(), { timeout: 20_000 })
      .toEqual(['PreToolUse hook allowed it: echo is fine.'])
  })
})
