// The real `keel` binary in a real terminal (tmux), driven by the scripted model: what a person would see.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { HAS_TMUX, IN_CI, skipWithout } from '../../../test-support/system-tools.ts'
import { processRunning } from './support.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('./fixtures/e2e.json', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the end-to-end terminal test')

const COLUMNS = 100
const ROWS = 50

/** One private tmux server (its own socket and config), so nothing of a developer's tmux is touched. */
class Tmux {
  readonly socket = `keel-e2e-${process.pid}`
  readonly dir = mkdtempSync(join(tmpdir(), 'keel-tmux-'))
  readonly conf = join(this.dir, 'tmux.conf')

  constructor() {
    // escape-time 0: tmux would otherwise hold a lone Esc for 500 ms to see if a sequence follows.
    writeFileSync(this.conf, 'set -s escape-time 0\nset -g history-limit 5000\n')
  }

  run(...args: string[]): string {
    const result = spawnSync('tmux', ['-u', '-L', this.socket, '-f', this.conf, ...args], { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr.trim()}`)
    return result.stdout
  }

  start(name: string, command: string): void {
    this.run('new-session', '-d', '-s', name, '-x', String(COLUMNS), '-y', String(ROWS), command)
  }

  /** The visible screen, or with `history` everything that scrolled off too. */
  screen(name: string, history = false): string {
    return this.run('capture-pane', '-p', '-t', name, ...(history ? ['-S', '-'] : [])).split('\n').map((line) => line.replace(/\s+$/, '')).join('\n')
  }

  type(name: string, text: string): void {
    this.run('send-keys', '-t', name, '-l', text)
  }

  key(name: string, key: string): void {
    this.run('send-keys', '-t', name, key)
  }

  /**
   * keel's exit status, once the wrapper shell has printed it (undefined before). Read from the screen, not from
   * `#{pane_dead_status}`: tmux 3.3 sometimes leaves an exited pane process unreaped, with no status.
   */
  exitStatus(name: string): number | undefined {
    const match = /\[keel exited (\d+)\]/.exec(this.screen(name))
    return match ? Number(match[1]) : undefined
  }

  dispose(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'])
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Polls until `check` holds (bounded); the failure shows the last screen. */
async function until(check: () => boolean, what: string, timeoutMs: number, screen: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (check()) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the screen:\n${screen()}`)
    await new Promise((done) => setTimeout(done, 40))
  }
}

/** Transcript and plan lines: what must look the same after `keel -c`. */
function transcriptLines(screen: string): string[] {
  return screen.split('\n').filter((line) => /^(› |● |  [⏹✗│] |  [✓◐○] |Plan \d)/.test(line))
}

function isSubsequence(needles: string[], haystack: string[]): boolean {
  let i = 0
  for (const line of haystack) if (line === needles[i]) i++
  return i === needles.length
}

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)('keel in tmux: plan panel live, cleared by the next prompt, esc cancels, keel -c rebuilds', async () => {
  if (!HAS_TMUX && IN_CI) throw new Error('tmux is not installed; under CI=true the end-to-end terminal test needs it (apt-get install tmux)')
  const tmux = new Tmux()
  const home = mkdtempSync(join(tmpdir(), 'keel-e2e-home-'))
  const cwd = mkdtempSync(join(tmpdir(), 'keel-e2e-cwd-'))
  cleanup = () => {
    tmux.dispose()
    rmSync(home, { recursive: true, force: true })
    rmSync(cwd, { recursive: true, force: true })
  }
  const keel = (flags: string) => `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --model 'scripted/${SCRIPT}' ${flags}; echo "[keel exited $?]"; sleep 600`
  const screen = (history = false) => tmux.screen('one', history)
  const has = (...parts: string[]) => () => { const s = screen(); return parts.every((part) => s.includes(part)) }

  tmux.start('one', keel(''))
  await until(has('SCRIPTED MODEL', 'scripted/e2e.json · 0 tokens', '─────'), 'the UI to start', 60_000, screen)

  tmux.type('one', 'build the widget')
  tmux.key('one', 'Enter')
  await until(has('Plan 0/3 · 1 in progress', '  ◐ Design the widget', '  ○ Build the widget', '  ○ Test the widget'), 'the plan panel to appear', 20_000, screen)
  await until(has('Plan 1/3 · 1 in progress', '  ✓ Design the widget', '  ◐ Build the widget', '  ○ Test the widget'), 'the first item done', 20_000, screen)
  const panel = screen().split('\n')
  const top = panel.findIndex((line) => line.startsWith('Plan 1/3'))
  const capture = panel.slice(top, top + 4).join('\n')
  if (process.env.KEEL_TUI_CAPTURE) writeFileSync(process.env.KEEL_TUI_CAPTURE, capture + '\n')
  expect(capture).toBe('Plan 1/3 · 1 in progress\n  ✓ Design the widget\n  ◐ Build the widget\n  ○ Test the widget')
  await until(has('  ✓ Build the widget', '  ◐ Test the widget'), 'the second item done', 20_000, screen)
  await until(has('Plan 3/3', '  ✓ Test the widget', 'Widget built and tested.'), 'the plan to complete', 20_000, screen)

  // The next prompt starts a turn: the standing plan clears (the reply streams slowly, so the gap is visible).
  tmux.type('one', 'run the long job')
  tmux.key('one', 'Enter')
  await until(() => screen().includes('› run the long job') && !/^Plan \d/m.test(screen()), 'the plan panel to clear', 20_000, screen)
  await until(() => has('Plan 0/1 · 1 in progress', '  ◐ Run the long job', 'sleep 30.4217')() && processRunning('30.4217'), 'the long command to run', 20_000, screen)

  tmux.key('one', 'Escape')
  // The bounds are far under the command's 30 s: a cancel that waited for the command to end would time out.
  await until(has('⏹ cancelled'), 'esc to cancel the turn', 10_000, screen)
  await until(() => !processRunning('30.4217'), 'the command to be killed', 10_000, screen)
  expect(screen()).toContain('✗ [cancelled by the user]')
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
}, 180_000)
