// The real `keel` binary in tmux, reading what the agent wrote: Markdown drawn (not shown as syntax), fenced code
// highlighted, and the edit/write diffs coloured, checked on the SGR codes tmux reports (`capture-pane -e`).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { IN_CI, skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('./fixtures/render.json', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the end-to-end rendering test')

/** `text` drawn with SGR parameter `code` in force: the codes just before it (tmux may merge or split them) hold it. */
function coloured(code: number, text: string): RegExp {
  const literal = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(`\\x1b\\[(?:[0-9;]*;)?${code}(?:;[0-9;]*)?m(?:\\x1b\\[[0-9;]*m)*${literal}`)
}

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: Markdown, highlighted code and coloured diffs, by their SGR codes',
  async () => {
    if (!HAS_TMUX && IN_CI)
      throw new Error(
        'tmux is not installed; under CI=true the end-to-end rendering test needs it (apt-get install tmux)',
      )
    const tmux = new Tmux(100, 60)
    const home = mkdtempSync(join(tmpdir(), 'keel-render-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-render-cwd-'))
    cleanup = () => {
      tmux.dispose()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    tmux.start(
      'r',
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --allow write --allow edit --model 'scripted/${SCRIPT}' 'tidy the greeting'; echo "[keel exited $?]"; sleep 600`,
    )
    const screen = () => tmux.screen('r')
    const ansi = () => tmux.screenAnsi('r')
    // The highlighter loads after the first frame with code in it: wait for the coloured keyword, not for time.
    await until(
      () => coloured(35, 'const').test(ansi()) && screen().includes('9% of 128k'),
      'the reply with highlighted code',
      60_000,
      screen,
    )
    const text = screen()
    const colours = ansi()
    if (process.env.KEEL_TUI_ANSI) writeFileSync(process.env.KEEL_TUI_ANSI, colours)

    // Markdown is drawn: no syntax left over, structure kept.
    expect(text).toContain('\n  Summary\n')
    expect(text).not.toMatch(/##|\*\*|\|---/)
    expect(text).toContain('  The greeting is polite now, and greet trims its input.')
    expect(text).toContain('  - wrote src/greet.ts')
    expect(text).toContain('  │ src/greet.ts │ +2 -1  │')
    // The link is shown with where it goes; raw HTML stays text.
    expect(text).toContain('See the docs (https://example.com/greet). <b>not bold</b>')
    expect(colours).toMatch(coloured(36, 'Summary'))
    expect(colours).toMatch(coloured(1, 'polite'))
    expect(colours).toMatch(coloured(33, 'greet'))
    // Fenced code: keyword, function name and string each in their colour.
    expect(text).toContain("    const message = greet(' Ada ')")
    expect(colours).toMatch(coloured(35, 'const'))
    expect(colours).toMatch(coloured(32, "' Ada '"))

    // One label per tool, with the change's size; the diffs are numbered and coloured.
    expect(text).toMatch(/● write src\/greet\.ts {2}\+5 {2}[\d.]+s/)
    expect(text).toMatch(/● edit src\/greet\.ts {2}\+2 -1 {2}[\d.]+s/)
    expect(text).toContain('    2 -   return `Hello, ${name}`')
    expect(text).toContain('    2 +   const polite = name.trim()')
    expect(text).toContain('    3 +   return `Good day, ${polite}`')
    expect(text).toContain('    6   export const farewell')
    expect(colours).toMatch(coloured(31, '-   return `Hello, ${name}`'))
    expect(colours).toMatch(coloured(32, '+   const polite = name.trim()'))
    expect(colours).toMatch(coloured(32, '+   return `Good day, ${polite}`'))
    // Context lines are not coloured as changes.
    expect(colours).not.toMatch(coloured(32, '  export const farewell'))
    expect(colours).not.toMatch(coloured(31, '  export const farewell'))

    // The footer: model, tokens and the share of the script's 128k window.
    expect(text).toMatch(/scripted\/render\.json · [\d.]+k tok · 9% of 128k · session [0-9a-f]{8}/)

    tmux.key('r', 'C-c')
    tmux.key('r', 'C-c')
    await until(() => tmux.exitStatus('r') !== undefined, 'ctrl+c twice to exit', 10_000, screen)
    expect(tmux.exitStatus('r')).toBe(0)
  },
  120_000,
)
