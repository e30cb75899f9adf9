// "Rewind to here" end to end: the real `keel serve` with @keel/checkpoint and the scripted model, driven from
// headless Chromium. Two prompts change files through bash; the person edits one of them; the card lists the files
// and the conflict and will not rewind until the person agrees to overwrite it; then the tree on disk is the one
// before the second prompt and the page continues in the fork, listed under its origin, with turn 1 and its plan.
// A files-only rewind from the fork then gives back the starting tree.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, REPO, type Served, serveScripted } from './serve-support.ts'
import { writeComposition } from '../../../test-support/composition.ts'
import { fileTree } from '../../../test-support/files.ts'

const skip = skipWithout('chromium', CHROMIUM !== undefined, 'the web rewind browser test')

const ARTIFACTS = join(REPO, 'test-artifacts')
const scratch = mkdtempSync(join(tmpdir(), 'keel-web-rewind-'))
const home = join(scratch, 'home')
const work = join(scratch, 'work')
let served: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** The events of a session's log file (the header first). */
function log(id: string): { type: string; [key: string]: unknown }[] {
  const dir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!)
  return readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
}

const plan = (status: string) => ({
  name: 'todo_write',
  arguments: { todos: [{ content: 'Change the files', status }] },
})
const bash = (command: string) => ({ name: 'bash', arguments: { command } })
/** The card's file list; while it has none, the card's whole text (so a failure shows what the card said instead). */
async function filesOf(card: Locator): Promise<string[] | string | null> {
  const files = await card.getByTestId('rewind-files').locator('li').allTextContents()
  return files.length ? files : await card.textContent()
}
const sessionOf = (page: Page) => /#s=(.+)$/.exec(page.url())?.[1]

describe.skipIf(skip)('rewind in headless Chromium', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    mkdirSync(work, { recursive: true })
    writeFileSync(
      join(scratch, 'script.json'),
      JSON.stringify({
        steps: [
          { toolCalls: [plan('in_progress'), bash('echo two > a.txt && echo new > made.txt && rm gone.txt')] },
          { toolCalls: [plan('completed')] },
          { text: 'Turn one done.' },
          { toolCalls: [bash('echo three > a.txt && echo later > later.txt')] },
          { text: 'Turn two done.' },
          { text: 'From the fork.' },
        ],
      }),
    )
    writeComposition(join(scratch, 'keel.yml'), [
      "- { id: todo, name: '@keel/todo' }",
      "- { id: checkpoint, name: '@keel/checkpoint', config: { enabled: true, maxFiles: 50000, maxBytes: 500000000 } }",
    ])
    served = await serveScripted(scratch, work, home)
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 800 })
  }, 180_000)

  test('the card lists files and conflicts, refuses until the person agrees, rewinds the disk and opens the fork', async () => {
    writeFileSync(join(work, 'a.txt'), 'one\n')
    writeFileSync(join(work, 'gone.txt'), 'delete me\n')
    const start = fileTree(work)
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    const pageErrors: string[] = []
    page.on('pageerror', (error) => pageErrors.push(error.message))
    await page.goto(served!.url)

    const assistant = page.getByTestId('assistant-message')
    const send = async (text: string) => {
      await page.getByTestId('composer-input').fill(text)
      await page.getByTestId('send').click()
    }
    await send('first change')
    await expect.poll(() => assistant.last().textContent(), { timeout: 20_000 }).toBe('Turn one done.')
    await expect.poll(() => page.getByTestId('send').count(), { timeout: 15_000 }).toBe(1)
    const afterOne = fileTree(work)
    expect(afterOne).toEqual({ 'a.txt': 'two\n', 'made.txt': 'new\n' })
    await send('second change')
    await expect.poll(() => assistant.last().textContent(), { timeout: 20_000 }).toBe('Turn two done.')
    await expect.poll(() => page.getByTestId('send').count(), { timeout: 15_000 }).toBe(1)
    const original = sessionOf(page)!
    expect(original).toBeTruthy()
    // The re-check after the turn's `bash` may land just after its end; the person's edit below comes after it (a
    // person is not that quick; the test is), else the edit would be taken for the agent's.
    const recheckLanded = () => {
      const types = log(original).map((event) => event.type)
      return types.lastIndexOf('checkpoint/snapshot') > types.lastIndexOf('tool/result')
    }
    await expect.poll(recheckLanded, { timeout: 15_000 }).toBe(true)

    // The person's own edit of a file the rewind would restore.
    writeFileSync(join(work, 'a.txt'), 'my own edit\n')
    const second = page.getByTestId('user-message').nth(1)
    await second.hover()
    await second.getByTestId('rewind-here').click()
    const card = page.getByTestId('rewind-card')
    await expect.poll(() => filesOf(card), { timeout: 15_000 }).toEqual(['restore a.txt', 'delete later.txt'])
    expect(await card.getByTestId('rewind-conflicts').locator('li').allTextContents()).toEqual(['a.txt'])
    expect(await card.textContent()).toContain('continues in a new session')
    // Refused until the person ticks the box that names their changes.
    expect(await card.getByTestId('rewind-go').isDisabled()).toBe(true)
    expect(fileTree(work)['a.txt']).toBe('my own edit\n')
    await card.getByTestId('rewind-overwrite').check()
    mkdirSync(ARTIFACTS, { recursive: true })
    await card.screenshot({ path: join(ARTIFACTS, 'web-rewind-card.png'), animations: 'disabled', caret: 'hide' })
    await card.getByTestId('rewind-go').click()

    // The page moves to the fork; the disk is as it was before the second prompt.
    await expect.poll(() => sessionOf(page), { timeout: 15_000 }).not.toBe(original)
    const fork = sessionOf(page)!
    expect(fileTree(work)).toEqual(afterOne)
    await expect
      .poll(() => page.getByTestId('rewind-info').textContent(), { timeout: 15_000 })
      .toContain('Rewound 2 files to the start of turn 2.')
    await expect
      .poll(() => page.getByTestId('user-message').allTextContents(), { timeout: 15_000 })
      .toEqual([expect.stringContaining('first change')])
    expect(await assistant.allTextContents()).toEqual(['Turn one done.'])
    // The rewound prompt waits in the composer, to edit and resend.
    expect(await page.getByTestId('composer-input').inputValue()).toBe('second change')
    await expect.poll(() => page.getByTestId('todo-counts').textContent(), { timeout: 15_000 }).toBe('1 completed')
    // The session list shows the fork right under its origin.
    const items = page.getByTestId('session-item')
    await expect
      .poll(() => items.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-fork-of') ?? '')))
      .toEqual(['', original])
    expect(await page.locator('.session-fork').count()).toBe(1)
    expect(log(fork)[0]).toMatchObject({ forkedFrom: { sessionId: original } })
    expect(log(original).find((e) => e.type === 'checkpoint/restore')).toMatchObject({
      data: { toTurn: 2, fork, files: ['a.txt', 'later.txt'] },
    })
    await page.screenshot({ path: join(ARTIFACTS, 'web-rewind-fork.png'), animations: 'disabled', caret: 'hide' })

    // The fork goes on by itself.
    await send('again')
    await expect.poll(() => assistant.last().textContent(), { timeout: 20_000 }).toBe('From the fork.')
    await expect.poll(() => page.getByTestId('send').count(), { timeout: 15_000 }).toBe(1)

    // Files only, back to the start of turn 1 from the fork: the starting tree, and the page stays in the fork.
    const first = page.getByTestId('user-message').first()
    await first.hover()
    await first.getByTestId('rewind-here').click()
    await card.getByTestId('rewind-scope-files').check()
    await expect
      .poll(() => filesOf(card), { timeout: 15_000 })
      .toEqual(['restore a.txt', 'recreate gone.txt', 'delete made.txt'])
    expect(await card.textContent()).not.toContain('continues in a new session')
    await card.getByTestId('rewind-go').click()
    await expect
      .poll(() => page.getByTestId('rewind-info').textContent(), { timeout: 15_000 })
      .toBe('Rewound 3 files to the start of turn 1.')
    expect(fileTree(work)).toEqual(start)
    expect(sessionOf(page)).toBe(fork)
    expect(pageErrors).toEqual([])
  }, 180_000)
})
