// `npx tsx packages/tui/scripts/screenshot.ts`: runs the real `keel` in a private tmux on the scripted session the
// rendering end-to-end test uses (tests/fixtures/render.json: a write, an edit, a Markdown reply with a table and
// code), captures the pane with its colours (`capture-pane -e`), turns the ANSI into HTML (ansi-to-html, escaping the
// text) and saves a picture of it to docs/tui.png with the Chromium the tests use.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Convert from 'ansi-to-html'
import { chromium } from 'playwright-core'
import { requireChromium } from '../../../test-support/system-tools.ts'
import { Tmux, until } from '../tests/tmux.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('../tests/fixtures/render.json', import.meta.url))
const OUT = join(REPO, 'docs/tui.png')
const COLUMNS = 100
const ROWS = 52

const tmux = new Tmux(COLUMNS, ROWS)
const home = mkdtempSync(join(tmpdir(), 'keel-tui-shot-home-'))
// A short, stable working directory for the footer: the picture should not show a random temp name.
const cwd = mkdtempSync(join(tmpdir(), 'greet-'))
try {
  tmux.start(
    'shot',
    `cd '${cwd}' && env KEEL_HOME='${home}' node '${join(REPO, 'bin/keel.js')}' --allow write --allow edit --model 'scripted/${SCRIPT}' 'Make the greeting more polite'; sleep 600`,
  )
  const screen = () => tmux.screen('shot')
  await until(() => /\x1b\[[0-9;]*35mconst/.test(tmux.screenAnsi('shot')), 'highlighted code', 60_000, screen)
  const ansi = tmux
    .screenAnsi('shot')
    .split('\n')
    .map((line) => line.replace(/\s+$/, ''))
    .join('\n')
    .replace(/\n+$/, '')
  // A dark terminal palette (the xterm defaults are too dim for a README).
  const colors = {
    0: '#1e1e2e',
    1: '#f38ba8',
    2: '#a6e3a1',
    3: '#f9e2af',
    4: '#89b4fa',
    5: '#cba6f7',
    6: '#89dceb',
    7: '#cdd6f4',
    8: '#7f849c',
  }
  const body = new Convert({ fg: '#cdd6f4', bg: '#1e1e2e', escapeXML: true, newline: false, colors }).toHtml(ansi)
  const html = `<!doctype html><meta charset="utf-8"><style>
    body { margin: 0; background: #1e1e2e; }
    pre { margin: 0; padding: 16px 20px; color: #cdd6f4; font: 14px/1.2 'DejaVu Sans Mono', 'Liberation Mono', monospace; }
  </style><pre>${body}</pre>`
  const browser = await chromium.launch({
    executablePath: requireChromium(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  })
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 400 }, deviceScaleFactor: 1 })
    await page.setContent(html)
    await page.locator('pre').screenshot({ path: OUT })
    console.log(`saved ${OUT}`)
  } finally {
    await browser.close()
  }
} finally {
  tmux.dispose()
  rmSync(home, { recursive: true, force: true })
  rmSync(cwd, { recursive: true, force: true })
}
