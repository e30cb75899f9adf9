// Asking in the terminal UI: the real `keel` binary in tmux, `ask` mode (the TUI's default), the scripted model
// asking for a command to deny, one to allow once, a write to allow always, and one to cancel with Ctrl+C.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { processRunning } from './support.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'
import { onlySessionEvents } from '../../../test-support/files.ts'
import { writeComposition } from '../../../test-support/composition.ts'

const skip = skipWithout('tmux', HAS_TMUX, 'the terminal approval test')

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('./fixtures/permissions.json', import.meta.url))

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux asks under the tool card: n denies, y allows once, a always, ctrl+c cancels; keel -c shows the decisions',
  async () => {
    const tmux = new Tmux(140, 50)
    const home = mkdtempSync(join(tmpdir(), 'keel-ask-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-ask-cwd-'))
    cleanup = () => {
      tmux.dispose()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    writeComposition(join(cwd, 'keel.yml'), [
      "- { id: fs, name: '@keel/fs' }",
      "- { id: permissions, name: '@keel/permissions' }",
    ])
    const keel = (flags: string) =>
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --config keel.yml --model 'scripted/${SCRIPT}' ${flags}; echo "[keel exited $?]"; sleep 600`
    const screen = (history = false) => tmux.screen('ask', history)
    const has =
      (...parts: string[]) =>
      () => {
        const s = screen()
        return parts.every((part) => s.includes(part))
      }
    const keys = 'y allow once  a always'

    tmux.start('ask', keel(''))
    await until(has('SCRIPTED MODEL', '─────'), 'the UI to start', 60_000, screen)
    tmux.type('ask', 'tidy up')
    tmux.key('ask', 'Enter')

    // 1. The command in full above the keys; n denies.
    await until(
      has('◆ Allow bash: rm -rf build?', '│ rm -rf build', `${keys} (bash(rm -rf build))  n/esc deny`),
      'the first prompt',
      20_000,
      screen,
    )
    tmux.type('ask', 'n')
    await until(has('  ✗ denied once by the user'), 'the denial under the card', 20_000, screen)

    // 2. Keys other than y/a/n/esc are swallowed while the prompt is up; y allows once.
    await until(has("◆ Allow bash: printf 'made\\n' > made.txt?"), 'the second prompt', 20_000, screen)
    // A '~' never occurs in a temp path (the screen shows the script's), so finding it later can only mean the editor.
    tmux.type('ask', 'z~q')
    tmux.key('ask', 'Enter')
    expect(screen()).toContain("◆ Allow bash: printf 'made\\n' > made.txt?")
    tmux.type('ask', 'y')
    await until(() => existsSync(join(cwd, 'made.txt')), 'the allowed command to run', 20_000, screen)
    await until(has('  ✓ allowed once by the user'), 'the allowance under the card', 20_000, screen)

    // 3. A write shows its content in full; a saves the rule and says where.
    await until(
      has('◆ Allow write notes.md?', '│ # Notes', '│ first line', '│ second line', '(write(notes.md))'),
      'the write prompt',
      20_000,
      screen,
    )
    tmux.type('ask', 'a')
    const settings = join(cwd, '.keel', 'settings.json')
    await until(
      has(`✓ allowed always by the user (write(notes.md) saved to ${settings})`),
      'the saved rule',
      20_000,
      screen,
    )
    expect(JSON.parse(readFileSync(settings, 'utf8')).permissions.allow).toEqual(['write(notes.md)'])
    // The decision is logged just before the write runs.
    await until(
      () =>
        existsSync(join(cwd, 'notes.md')) &&
        readFileSync(join(cwd, 'notes.md'), 'utf8') === '# Notes\nfirst line\nsecond line\n',
      'the write',
      20_000,
      screen,
    )

    // 4. Ctrl+C while asked cancels the turn: the prompt goes, nothing ran, and Keel keeps running.
    await until(has('◆ Allow bash: sleep 30.6613 > slept.txt?'), 'the fourth prompt', 20_000, screen)
    tmux.key('ask', 'C-c')
    await until(
      () => has('⏹ cancelled')() && !screen().includes('◆ Allow'),
      'ctrl+c to cancel the turn',
      20_000,
      screen,
    )
    expect(processRunning('30.6613')).toBe(false)
    expect(existsSync(join(cwd, 'slept.txt'))).toBe(false)
    // The swallowed keys never reached the editor.
    expect(screen()).not.toContain('z~q')

    const events = onlySessionEvents(home)
    const decisions = events.filter((event) => event.type === 'permission/decision').map((event) => event.data)
    expect(decisions).toEqual([
      { callId: 'call-rm', decision: 'deny', scope: 'once' },
      { callId: 'call-make', decision: 'allow', scope: 'once' },
      { callId: 'call-notes', decision: 'allow', scope: 'always', rule: 'write(notes.md)', file: settings },
    ])
    expect(events.filter((event) => event.type === 'permission/request').map((event) => event.data.callId)).toEqual([
      'call-rm',
      'call-make',
      'call-notes',
      'call-sleep',
    ])
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })

    tmux.type('ask', '/quit')
    tmux.key('ask', 'Enter')
    await until(() => tmux.exitStatus('ask') !== undefined, 'keel to exit', 10_000, screen)
    expect(tmux.exitStatus('ask')).toBe(0)

    // A cold rebuild from the log shows the same decisions under the same cards.
    tmux.start('again', keel('-c'))
    const again = (history = false) => tmux.screen('again', history)
    await until(() => again().includes('Resumed session'), 'keel -c to start', 60_000, again)
    const rebuilt = again(true)
    expect(rebuilt).toMatch(/● bash rm -rf build[^\n]*\n {2}✗ denied once by the user/)
    expect(rebuilt).toMatch(/● bash printf[^\n]*\n {2}✓ allowed once by the user/)
    expect(rebuilt).toContain(`✓ allowed always by the user (write(notes.md) saved to ${settings})`)
    tmux.key('again', 'C-c')
    tmux.key('again', 'C-c')
    await until(() => tmux.exitStatus('again') !== undefined, 'ctrl+c twice to exit', 10_000, again)
  },
  180_000,
)
