// Images from the web composer, end to end: `keel serve` against the strict fake Anthropic server, driven from
// headless Chromium. A picked file is checked in the page, shown as a chip, sent with the prompt (the request carries
// it) and shown under the prompt; a file that is no image is refused in one line. The header lists running jobs.
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { BrowserContext } from 'playwright-core'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, serve, type Served } from './serve-support.ts'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('Chromium', CHROMIUM !== undefined, 'the web UI browser tests')
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)
const marker = `keeljob${randomUUID().replaceAll('-', '')}`

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-images-'))
let served: Served | undefined
let context: BrowserContext | undefined
let fake: FakeProvider | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await served?.stop()
  await fake?.close()
  rmSync(scratch, { recursive: true, force: true })
})

describe.skipIf(skip)('images and jobs in the web UI', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    mkdirSync(join(scratch, 'work'))
    writeFileSync(join(scratch, 'shot.png'), PNG)
    writeFileSync(join(scratch, 'notes.png'), 'not a picture')
    fake = await startFakeProvider([
      { text: 'A single red pixel.' },
      { toolCalls: [{ name: 'bash', arguments: { command: `sleep 300; echo ${marker}`, background: true } }] },
      { text: 'Started it.' },
    ])
    served = await serve(
      ['--port', '0', '--model', 'anthropic/claude-sonnet-4-6', '--allow', 'bash', '--cwd', join(scratch, 'work')],
      { KEEL_HOME: join(scratch, 'home'), ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: fake.url },
      join(scratch, 'work'),
    )
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test('a picked image is sent with the prompt; one that is no image is refused in one line', async () => {
    const page = context!.pages()[0] ?? (await context!.newPage())
    await page.goto(served!.url)
    await page.getByTestId('image-picker').setInputFiles(join(scratch, 'notes.png'))
    await page.getByTestId('attachment-refused').waitFor()
    expect(await page.getByTestId('attachment-refused').textContent()).toBe(
      'notes.png is not a PNG, JPEG, GIF or WebP image',
    )
    expect(await page.getByTestId('attachment').count()).toBe(0)
    await page.getByTestId('image-picker').setInputFiles(join(scratch, 'shot.png'))
    await page.getByTestId('attachment').waitFor()
    expect(await page.getByTestId('attachment').textContent()).toBe(`[image shot.png ${PNG.length} B] ×`)
    await page.getByTestId('composer-input').fill('what is in this screenshot?')
    await page.getByTestId('send').click()
    await page.getByText('A single red pixel.').waitFor()
    const content = fake!.requests[0]!.body.messages[0].content
    expect(content.map(({ cache_control, ...block }: Record<string, unknown>) => block)).toEqual([
      { type: 'text', text: 'what is in this screenshot?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } },
    ])
    expect(await page.getByTestId('message-image').textContent()).toBe(`[image shot.png ${PNG.length} B]`)
    expect(await page.getByTestId('attachment').count()).toBe(0)
    // Stored on the log once, with its name.
    const sessions = join(scratch, 'home', 'sessions')
    const [slug] = readdirSync(sessions)
    const [file] = readdirSync(join(sessions, slug!))
    const log = readFileSync(join(sessions, slug!, file!), 'utf8')
    expect(log.split(PNG.toString('base64')).length - 1).toBe(1)

    // Pasted (a screenshot on the clipboard) and dropped files attach the same way; a chip's click removes it.
    await page.getByTestId('composer-input').evaluate((area, data) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0))
      const pasted = new DataTransfer()
      pasted.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }))
      area.dispatchEvent(new ClipboardEvent('paste', { clipboardData: pasted, bubbles: true, cancelable: true }))
      const dropped = new DataTransfer()
      dropped.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }))
      area.dispatchEvent(new DragEvent('drop', { dataTransfer: dropped, bubbles: true, cancelable: true }))
    }, PNG.toString('base64'))
    await page.getByTestId('attachment').nth(1).waitFor()
    expect(await page.getByTestId('attachment').allTextContents()).toEqual([
      `[image pasted.png ${PNG.length} B] ×`,
      `[image dropped.png ${PNG.length} B] ×`,
    ])
    await page.getByTestId('attachment').first().click()
    await page.getByTestId('attachment').first().click()
    expect(await page.getByTestId('attachment').count()).toBe(0)

    await page.getByTestId('composer-input').fill('start a job')
    await page.getByTestId('send').click()
    await page.getByText('Started it.').waitFor()
    await page.getByTestId('jobs').waitFor()
    expect(await page.getByTestId('jobs').locator('summary').textContent()).toBe('1 job')
    expect(await page.getByTestId('job').textContent()).toMatch(
      new RegExp(`^job-1 · \\d+s · sleep 300; echo ${marker}$`),
    )
  })
})
