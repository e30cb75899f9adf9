// `npx tsx packages/web/scripts/screenshots.ts`: runs `keel serve` on the scripted demo session (demo-session.ts) and
// saves the web UI at desktop and phone width to docs/web-desktop.png and docs/web-phone.png, with the Chromium
// the tests use (KEEL_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Page } from 'playwright-core'
import { REPO, serve } from '../tests/serve-support.ts'
import { requireChromium } from '../../../test-support/system-tools.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { writeDemo } from './demo-session.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-shots-'))
const demo = writeDemo(scratch)
await ensureClientBuilt({ log: (line) => console.log(line) })
const served = await serve(
  ['--port', '0', '--model', demo.model, '--cwd', scratch, '--config', demo.config],
  { KEEL_HOME: join(scratch, 'home') },
  scratch,
)
const browser = await chromium.launch({
  executablePath: requireChromium(),
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
})

/** Waits until the reply's code is highlighted and the diff is drawn: the page then looks as a reader sees it. */
async function settled(page: Page): Promise<void> {
  await page.locator('[data-testid="code-block"] code[data-highlighted="yes"]').first().waitFor({ timeout: 30_000 })
  await page.locator('tr.diff-add').first().waitFor()
  await page.getByTestId('send').waitFor()
  await page.waitForFunction(
    () => ![...document.querySelectorAll('.session-meta')].some((el) => el.textContent?.includes('running')),
  )
}

try {
  const desktop = await browser.newPage({ viewport: { width: 1280, height: 1000 }, colorScheme: 'light' })
  await desktop.goto(served.url)
  await desktop.getByTestId('composer-input').fill('Let greet() take a name')
  await desktop.getByTestId('send').click()
  await settled(desktop)
  const hash = new URL(desktop.url()).hash
  // Start at the tool rows, so the output preview, the diff and the reply share the screen.
  await desktop.locator('[data-tool="bash"]').evaluate((el) => el.scrollIntoView({ block: 'start' }))
  await desktop.screenshot({ path: join(REPO, 'docs/web-desktop.png'), animations: 'disabled', caret: 'hide' })

  const phone = await browser.newPage({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    colorScheme: 'light',
  })
  await phone.goto(`${served.url.split('#')[0]}${hash}`)
  await settled(phone)
  await phone
    .locator('[data-testid="assistant-message"]')
    .last()
    .evaluate((el) => el.scrollIntoView({ block: 'start' }))
  await phone.screenshot({ path: join(REPO, 'docs/web-phone.png'), animations: 'disabled', caret: 'hide' })
  console.log('keel: wrote docs/web-desktop.png and docs/web-phone.png')
} finally {
  await browser.close()
  await served.stop()
  rmSync(scratch, { recursive: true, force: true })
}
