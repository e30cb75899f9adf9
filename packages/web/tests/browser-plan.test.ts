// Plan mode in the web page end to end: the real `keel serve` in plan mode with the scripted model, headless
// Chromium answering the proposal card and editing the TodoPanel, the log read back from disk.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Page } from 'playwright-core'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, REPO, type Served, serveScripted } from './serve-support.ts'
import { writeComposition } from '../../../test-support/composition.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web plan-mode browser tests')

const ARTIFACTS = join(REPO, 'test-artifacts')
const scratch = mkdtempSync(join(tmpdir(), 'keel-web-plan-'))
const home = join(scratch, 'home')
const work = join(scratch, 'work')
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

function logged(sessionId: string): { type: string; data: Record<string, any> }[] {
  const dir = join(home, 'sessions')
  for (const slug of readdirSync(dir)) {
    const file = join(dir, slug, `${sessionId}.jsonl`)
    if (!existsSync(file)) continue
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(1)
      .map((line) => JSON.parse(line))
  }
  return []
}

const items = (page: Page) => page.getByTestId('todo-panel').locator('.todo-content').allTextContents()

describe.skipIf(skip)('plan mode in headless Chromium', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    mkdirSync(work, { recursive: true })
    writeFileSync(
      join(scratch, 'script.json'),
      JSON.stringify({
        steps: [
          {
            toolCalls: [
              {
                id: 'p1',
                name: 'propose_plan',
                arguments: {
                  plan: '## Plan\nWrite **a.txt**.',
                  todos: [
                    { content: 'Write a.txt', status: 'pending' },
                    { content: 'Check it', status: 'pending' },
                  ],
                },
              },
            ],
          },
          { text: 'Proposed.' },
          { toolCalls: [{ id: 'w1', name: 'write', arguments: { path: 'a.txt', content: 'x\n' } }] },
          { text: 'Wrote it.' },
        ],
      }),
    )
    writeComposition(join(scratch, 'keel.yml'), [
      "- { id: fs, name: '@keel/fs' }",
      "- { id: todo, name: '@keel/todo' }",
      "- { id: permissions, name: '@keel/permissions', config: { mode: plan } }",
    ])
    served = await serveScripted(scratch, work, home)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 900 })
  }, 180_000)

  test('the proposal card, an edit, approval in auto; TodoPanel edits; a reload shows the same state', async () => {
    const pageErrors: string[] = []
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    page.on('pageerror', (error) => pageErrors.push(error.message))
    await page.goto(served!.url)
    expect(await page.getByTestId('mode-control').inputValue()).toBe('plan')
    await page.getByTestId('composer-input').fill('Add a.txt')
    await page.getByTestId('send').click()

    const card = page.getByTestId('proposal-card')
    await expect.poll(() => card.getAttribute('data-status'), { timeout: 20_000 }).toBe('pending')
    expect(await card.locator('strong').textContent()).toBe('a.txt')
    const sessionId = /#s=([\w-]+)/.exec(page.url())![1]!

    // Edit: the checklist gets a third task; an empty plan text is refused with the rule named.
    await card.getByTestId('proposal-edit').click()
    await card.getByTestId('proposal-items').fill('Write a.txt\nCheck it\nWrite a.txt')
    await card.getByTestId('proposal-save').click()
    await expect
      .poll(() => card.getByTestId('proposal-error').textContent(), { timeout: 20_000 })
      .toContain('repeats todos[0]')
    await card.getByTestId('proposal-items').fill('Write a.txt\nCheck it\nTell the user')
    await card.getByTestId('proposal-save').click()
    await expect
      .poll(() => card.getByTestId('todo-item').allTextContents(), { timeout: 20_000 })
      .toEqual(['Write a.txt', 'Check it', 'Tell the user'])
    mkdirSync(ARTIFACTS, { recursive: true })
    await card.screenshot({ path: join(ARTIFACTS, 'web-plan-proposal.png'), animations: 'disabled', caret: 'hide' })

    // Approve in auto: the turn writes the file, the panel shows the approved checklist, the mode follows.
    await card.getByTestId('proposal-approve-auto').click()
    await expect.poll(() => card.getAttribute('data-status'), { timeout: 20_000 }).toBe('approved')
    await expect
      .poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 20_000 })
      .toBe('Wrote it.')
    expect(readFileSync(join(work, 'a.txt'), 'utf8')).toBe('x\n')
    await expect.poll(() => page.getByTestId('mode-control').inputValue(), { timeout: 20_000 }).toBe('auto')
    await expect.poll(() => items(page), { timeout: 20_000 }).toEqual(['Write a.txt', 'Check it', 'Tell the user'])

    // The person's edits in the TodoPanel: add, mark done, move up, and a duplicate refused with the rule.
    await page.getByTestId('todo-add-text').fill('Write docs')
    await page.getByTestId('todo-add').click()
    await expect.poll(() => items(page), { timeout: 20_000 }).toHaveLength(4)
    await page.getByTestId('todo-panel').getByTestId('todo-done').first().click()
    await page.getByTestId('todo-panel').getByTestId('todo-up').nth(3).click()
    await expect
      .poll(() => items(page), { timeout: 20_000 })
      .toEqual(['Write a.txt', 'Check it', 'Write docs', 'Tell the user'])
    await page.getByTestId('todo-add-text').fill('Check it')
    await page.getByTestId('todo-add').click()
    await expect
      .poll(() => page.getByTestId('todo-error').textContent(), { timeout: 20_000 })
      .toContain('the plan was not changed: todos[4] repeats todos[1]')

    // A reload folds the same log: the same card, the same plan.
    await page.reload()
    await expect.poll(() => card.getAttribute('data-status'), { timeout: 20_000 }).toBe('approved')
    await expect
      .poll(() => items(page), { timeout: 20_000 })
      .toEqual(['Write a.txt', 'Check it', 'Write docs', 'Tell the user'])
    expect(
      await page.getByTestId('todo-panel').locator('[data-status="completed"]').getByText('Write a.txt').count(),
    ).toBe(1)

    const events = logged(sessionId)
    expect(events.filter((e) => e.type.startsWith('plan/')).map((e) => e.type)).toEqual([
      'plan/proposal',
      'plan/edit',
      'plan/approve',
    ])
    expect(events.filter((e) => e.type === 'todo/write' && e.data.source === 'user').length).toBeGreaterThanOrEqual(4)
    expect(pageErrors).toEqual([])
  }, 120_000)
})
