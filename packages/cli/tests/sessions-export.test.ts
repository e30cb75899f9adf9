// `keel sessions export` through the real binary: a session written by the real loop (a plan, a denied call, a
// subagent), exported as Markdown to standard output and as HTML to a file, which headless Chromium opens with the
// network cut off: it renders whole and asks for nothing. KEEL_UPDATE_DOCS=1 copies the screenshot into docs/.
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CHROMIUM, requireChromium, skipWithout } from '../../../test-support/system-tools.ts'

const REPO = join(import.meta.dirname, '../../..')
const ARTIFACTS = join(REPO, 'test-artifacts')
const scratch = mkdtempSync(join(tmpdir(), 'keel-export-'))
const home = join(scratch, 'home')
const cwd = join(scratch, 'project')
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function keel(args: string[]) {
  return spawnSync(process.execPath, [join(REPO, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home },
    encoding: 'utf8',
    input: '',
    timeout: 120_000,
  })
}

let id = ''
beforeAll(() => {
  mkdirSync(join(cwd, '.git'), { recursive: true })
  const script = join(scratch, 'script.json')
  writeFileSync(
    script,
    JSON.stringify({
      steps: [
        {
          when: 'PARENT',
          text: 'I will plan first.',
          toolCalls: [
            {
              name: 'todo_write',
              arguments: { todos: [{ content: 'count <to> 3000', status: 'in_progress' }] },
            },
          ],
        },
        { when: 'PARENT', toolCalls: [{ name: 'bash', arguments: { command: 'seq 1 3000' } }] },
        { when: 'PARENT', toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf build' } }] },
        { when: 'PARENT', toolCalls: [{ name: 'task', arguments: { description: 'Look', prompt: 'CHILD: look' } }] },
        { when: 'CHILD', text: 'the child looked' },
        {
          when: 'PARENT',
          text: 'Counted.',
          toolCalls: [
            { name: 'todo_write', arguments: { todos: [{ content: 'count <to> 3000', status: 'completed' }] } },
          ],
        },
        { when: 'PARENT', text: 'All done.' },
      ],
    }),
  )
  const run = keel(['-p', 'PARENT: count', '--model', `scripted/${script}`, '--mode', 'ask', '--allow', 'bash(seq:*)'])
  expect(run.status, run.stderr).toBe(0)
  id = /session ([0-9a-f-]{36})/.exec(run.stderr)![1]!
}, 180_000)

describe('keel sessions export', () => {
  test('--markdown to standard output: plan at the turn end, decisions, subagent, cut output', () => {
    const result = keel(['sessions', 'export', id.slice(0, 8), '--markdown'])
    expect(result.status, result.stderr).toBe(0)
    expect(result.stdout).toContain('# PARENT: count')
    expect(result.stdout).toContain('Permission: ✓ allowed by rule bash(seq:*)')
    expect(result.stdout).toContain('Permission: ✗ denied by ask mode')
    expect(result.stdout).toContain('### Subagent: Look (completed)')
    expect(result.stdout).toContain('> the child looked')
    expect(result.stdout).toMatch(/_\(cut: \d+ of \d+ characters not shown\)_/)
    expect(result.stdout).toContain('**Plan 1/1** at the end of turn 1\n\n- [x] count \\<to\\> 3000')
  })

  test('one of --markdown or --html, and a clear error for an unknown session', () => {
    expect(keel(['sessions', 'export', id]).stderr).toContain('sessions export takes one of --markdown or --html')
    expect(keel(['sessions', 'export', id, '--markdown', '--html']).status).not.toBe(0)
    const missing = keel(['sessions', 'export', 'ffffffff', '--html'])
    expect(missing.status).not.toBe(0)
    expect(missing.stderr.trim().split('\n')).toHaveLength(1)
  })

  const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the export browser test')
  test.skipIf(skip)(
    '--html -o: one file that Chromium renders offline, asking the network for nothing',
    async () => {
      const file = join(scratch, 'session.html')
      const result = keel(['sessions', 'export', id, '--html', '-o', file])
      expect(result.status, result.stderr).toBe(0)
      expect(result.stdout).toContain(`to ${file}`)
      expect(readFileSync(file, 'utf8')).toContain('count &lt;to&gt; 3000')
      const { chromium } = await import('playwright-core')
      const browser = await chromium.launch({
        executablePath: requireChromium(),
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
      })
      try {
        const context = await browser.newContext({ offline: true, viewport: { width: 1000, height: 1400 } })
        const asked: string[] = []
        context.on('request', (request) => {
          if (!request.url().startsWith('file:')) asked.push(request.url())
        })
        const page = await context.newPage()
        const errors: string[] = []
        page.on('pageerror', (error) => errors.push(error.message))
        page.on('console', (message) => {
          if (message.type() === 'error') errors.push(message.text())
        })
        await page.goto(pathToFileURL(file).href)
        expect(await page.title()).toBe('PARENT: count · Keel session')
        expect(await page.locator('.tool').count()).toBeGreaterThanOrEqual(5)
        expect(await page.locator('.subagent h3').textContent()).toBe('Subagent: Look (completed)')
        expect(await page.locator('.plan').first().textContent()).toContain('count <to> 3000')
        expect(await page.locator('.decision.deny').textContent()).toContain('denied by ask mode')
        // The page's own styles applied (not a browser's default page): the tool boxes have their border.
        expect(
          await page
            .locator('.tool')
            .first()
            .evaluate((el) => getComputedStyle(el).borderTopStyle),
        ).toBe('solid')
        expect(asked).toEqual([])
        expect(errors).toEqual([])
        mkdirSync(ARTIFACTS, { recursive: true })
        await page.screenshot({ path: join(ARTIFACTS, 'session-export.png'), fullPage: false })
        if (process.env.KEEL_UPDATE_DOCS === '1')
          copyFileSync(join(ARTIFACTS, 'session-export.png'), join(REPO, 'docs/session-export.png'))
      } finally {
        await browser.close()
      }
    },
    60_000,
  )
})
