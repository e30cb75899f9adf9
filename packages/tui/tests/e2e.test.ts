// The real `keel` binary in a real terminal (tmux), driven by the scripted model: what a person would see.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { IN_CI, skipWithout } from '../../../test-support/system-tools.ts'
import { processRunning } from './support.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('./fixtures/e2e.json', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the end-to-end terminal test')

/** Transcript and plan lines: what must look the same after `keel -c`. */
function transcriptLines(screen: string): string[] {
  return screen.split('\n').filter((line) => /^(› |● | {2}[⏹✗│] | {2}[✓◐○] |Plan \d)/.test(line))
}

function isSubsequence(needles: string[], haystack: string[]): boolean {
  let i = 0
  for (const line of haystack) if (line === needles[i]) i++
  return i === needles.length
}

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: plan panel live, cleared by the next prompt, esc cancels, keel -c rebuilds',
  async () => {
    if (!HAS_TMUX && IN_CI)
      throw new Error(
        'tmux is not installed; under CI=true the end-to-end terminal test needs it (apt-get install tmux)',
      )
    const tmux = new Tmux()
    const home = mkdtempSync(join(tmpdir(), 'keel-e2e-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-e2e-cwd-'))
    cleanup = () => {
      tmux.dispose()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    // bash allowed by a rule: this test is about the plan, and its commands would otherwise ask (`ask` mode).
    const keel = (flags: string) =>
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --allow bash --model 'scripted/${SCRIPT}' ${flags}; echo "[keel exited $?]"; sleep 600`
    const screen = (history = false) => tmux.screen('one', history)
    const has =
      (...parts: string[]) =>
      () => {
        const s = screen()
        return parts.every((part) => s.includes(part))
      }

    tmux.start('one', keel(''))
    await until(has('SCRIPTED MODEL', 'scripted/e2e.json · 0 tok', '─────'), 'the UI to start', 60_000, screen)

    tmux.type('one', 'build the widget')
    tmux.key('one', 'Enter')
    await until(
      has('Plan 0/3 · 1 in progress', '  ◐ Design the widget', '  ○ Build the widget', '  ○ Test the widget'),
      'the plan panel to appear',
      20_000,
      screen,
    )
    await until(
      has('Plan 1/3 · 1 in progress', '  ✓ Design the widget', '  ◐ Build the widget', '  ○ Test the widget'),
      'the first item done',
      20_000,
      screen,
    )
    const panel = screen().split('\n')
    const top = panel.findIndex((line) => line.startsWith('Plan 1/3'))
    const capture = panel.slice(top, top + 4).join('\n')
    if (process.env.KEEL_TUI_CAPTURE) writeFileSync(process.env.KEEL_TUI_CAPTURE, capture + '\n')
    expect(capture).toBe('Plan 1/3 · 1 in progress\n  ✓ Design the widget\n  ◐ Build the widget\n  ○ Test the widget')
    await until(has('  ✓ Build the widget', '  ◐ Test the widget'), 'the second item done', 20_000, screen)
    await until(
      has('Plan 3/3', '  ✓ Test the widget', 'Widget built and tested.'),
      'the plan to complete',
      20_000,
      screen,
    )

    // The next prompt starts a turn: the standing plan clears (the reply streams slowly, so the gap is visible).
    tmux.type('one', 'run the long job')
    tmux.key('one', 'Enter')
    await until(
      () => screen().includes('› run the long job') && !/^Plan \d/m.test(screen()),
      'the plan panel to clear',
      20_000,
      screen,
    )
    await until(
      () => has('Plan 0/1 · 1 in progress', '  ◐ Run the long job', 'sleep 30.4217')() && processRunning('30.4217'),
      'the long command to run',
      20_000,
      screen,
    )

    tmux.key('one', 'Escape')
    // The bounds are far under the command's 30 s: a cancel that waited for the command to end would time out.
    await until(has('⏹ cancelled'), 'esc to cancel the turn', 10_000, screen)
    await until(() => !processRunning('30.4217'), 'the command to be killed', 10_000, screen)
    expect(screen()).toMatch(/● bash sleep 30.* cancelled /)
    // turn/end keeps the plan.
    expect(screen()).toContain('  ◐ Run the long job')
    const before = transcriptLines(screen())

    tmux.type('one', '/quit')
    tmux.key('one', 'Enter')
    await until(() => tmux.exitStatus('one') !== undefined, 'keel to exit', 10_000, screen)
    expect(tmux.exitStatus('one')).toBe(0)

    tmux.start('two', keel('-c'))
    const again = (history = false) => tmux.screen('two', history)
    await until(() => again().includes('Resumed session'), 'keel -c to start', 60_000, again)
    const rebuilt = again(true)
    expect(rebuilt).toContain('› build the widget')
    expect(rebuilt).toContain('Widget built and tested.')
    expect(again()).toContain('Plan 0/1 · 1 in progress\n  ◐ Run the long job')
    expect(before.length).toBeGreaterThan(8)
    expect(isSubsequence(before, transcriptLines(rebuilt))).toBe(true)

    tmux.key('two', 'C-c')
    tmux.key('two', 'C-c')
    await until(() => tmux.exitStatus('two') !== undefined, 'ctrl+c twice to exit', 10_000, again)
    expect(tmux.exitStatus('two')).toBe(0)
  },
  180_000,
)
