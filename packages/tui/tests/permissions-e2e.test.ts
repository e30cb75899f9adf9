// Asking in the terminal UI: the real `keel` binary in tmux, `ask` mode (the TUI's default), the scripted model
// asking while the person types a sentence (nothing is answered, the text stays theirs), a denial with a sentence, an
// "always" on a piped test command (the prefix rule is saved and the next variant runs unasked), an allow for the
// session, a Ctrl+C cancel; then Shift+Tab cycling the mode and a `!command` that runs without asking.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { processRunning } from './support.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'
import { onlySessionEvents } from '../../../test-support/files.ts'
import { writeComposition } from '../../../test-support/composition.ts'
import { SETTLE_MS } from '../src/deliberate.ts'

const pause = () => new Promise((done) => setTimeout(done, SETTLE_MS + 150))

const skip = skipWithout('tmux', HAS_TMUX, 'the terminal approval test')

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('./fixtures/permissions.json', import.meta.url))

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: typing never answers, deny with a sentence, always saves the prefix, session allows, ctrl+c cancels, shift+tab cycles, !cmd runs unasked; keel -c shows the decisions',
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
    mkdirSync(join(cwd, '.git'))
    mkdirSync(join(cwd, 'dist'))
    writeFileSync(join(cwd, 'dist', 'app.js'), 'release\n')
    writeFileSync(join(cwd, 'package.json'), JSON.stringify({ scripts: { test: 'echo tests-ok' } }))
    const keel = (flags: string) =>
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --config keel.yml --model 'scripted/${SCRIPT}' ${flags}; echo "[keel exited $?]"; sleep 600`
    const screen = (history = false) => tmux.screen('ask', history)
    const has =
      (...parts: string[]) =>
      () => {
        const s = screen()
        return parts.every((part) => s.includes(part))
      }

    tmux.start('ask', keel(''))
    await until(has('SCRIPTED MODEL', '─────', '· ask mode ·'), 'the UI to start', 60_000, screen)
    tmux.type('ask', 'tidy up')
    tmux.key('ask', 'Enter')

    // 1. The prompt opens while the person types a sentence: its letters (a, y, n…) and its Enter answer nothing,
    // and the sentence is in the editor.
    await until(
      has('◆ Allow bash: rm -rf dist?', '│ rm -rf dist', '❯ 1. Allow once', '6. Deny, and tell the model why…'),
      'the first prompt',
      20_000,
      screen,
    )
    tmux.type('ask', 'actually keep dist')
    tmux.key('ask', 'Enter')
    await until(has('actually keep dist'), 'the sentence queued', 10_000, screen)
    expect(screen()).toContain('◆ Allow bash: rm -rf dist?')
    expect(existsSync(join(cwd, 'dist', 'app.js'))).toBe(true)
    expect(existsSync(join(cwd, '.keel'))).toBe(false)
    // After a pause: 6, Enter, a sentence for the model, Enter.
    await pause()
    tmux.type('ask', '6')
    tmux.key('ask', 'Enter')
    await until(has('Why? The model reads this with the denial:'), 'the sentence line', 10_000, screen)
    tmux.type('ask', 'keep dist, it is the release')
    tmux.key('ask', 'Enter')
    await until(has('✗ denied once by the user: “keep dist, it is the release”'), 'the denial', 20_000, screen)

    // 2. "Always" on a piped test command offers and saves the prefix of the part that needed asking.
    await until(
      has('◆ Allow bash: npm test 2>&1 | tail -3?', '3. Always allow  bash(npm test:*) → .keel/settings.local.json'),
      'the test prompt',
      20_000,
      screen,
    )
    await pause()
    tmux.type('ask', '3')
    tmux.key('ask', 'Enter')
    const local = join(cwd, '.keel', 'settings.local.json')
    await until(() => existsSync(local), 'the saved rule', 20_000, screen)
    expect(JSON.parse(readFileSync(local, 'utf8')).permissions.allow).toEqual(['bash(npm test:*)'])
    // Written just after the settings file: wait for it rather than read between the two writes.
    const ignore = join(cwd, '.keel', '.gitignore')
    await until(() => existsSync(ignore) && readFileSync(ignore, 'utf8') !== '', 'the ignore line', 10_000, screen)
    expect(readFileSync(ignore, 'utf8')).toBe('settings.local.json\n')

    // 3. The next variant runs unasked; then an allow for the session, and the same command again unasked.
    await until(has('◆ Allow bash: touch made.txt?', '2. Allow for this session'), 'the touch prompt', 30_000, screen)
    expect(screen(true)).not.toContain('◆ Allow bash: npm test -- --silent')
    await pause()
    tmux.key('ask', 'Down')
    tmux.key('ask', 'Enter')

    // 4. Ctrl+C while asked cancels the turn: the prompt goes, nothing ran, and Keel keeps running.
    await until(has('◆ Allow bash: sleep 30.6613 > slept.txt?'), 'the sleep prompt', 20_000, screen)
    tmux.key('ask', 'C-c')
    await until(
      () => has('⏹ cancelled')() && !screen().includes('◆ Allow'),
      'ctrl+c to cancel the turn',
      20_000,
      screen,
    )
    expect(processRunning('30.6613')).toBe(false)
    expect(existsSync(join(cwd, 'slept.txt'))).toBe(false)
    expect(existsSync(join(cwd, 'made.txt'))).toBe(true)
    expect(existsSync(join(cwd, 'dist', 'app.js'))).toBe(true)

    // 5. Shift+Tab steps through the modes, each change on the log and in the footer.
    for (const mode of ['auto', 'read-only', 'plan', 'ask']) {
      tmux.key('ask', 'BTab')
      await until(has(`· ${mode} mode ·`), `the footer to say ${mode}`, 10_000, screen)
    }

    // 6. The sentence typed during the approval was queued, never taken as its answer: it reached the model as
    // steering (above). A new prompt opens the second turn. Then `!touch` runs without asking.
    expect(screen(true)).toContain('sent while the agent worked')
    tmux.type('ask', 'go on')
    tmux.key('ask', 'Enter')
    await until(has('Second turn.'), 'the second turn', 20_000, screen)
    // A `!command` typed while a turn runs stays in the editor (only prompts queue): the turn's text is on screen a
    // moment before it ends, so wait for its end on the log.
    await until(
      () =>
        onlySessionEvents(home).filter((event) => event.type === 'turn/end').length >= 2 &&
        !screen().includes('esc to cancel'),
      'the second turn to end',
      20_000,
      screen,
    )
    tmux.type('ask', '!touch bang.txt')
    tmux.key('ask', 'Enter')
    await until(() => existsSync(join(cwd, 'bang.txt')), 'the ! command to run', 20_000, screen)
    expect(screen(true)).not.toContain('◆ Allow bash: touch bang.txt')

    const events = onlySessionEvents(home)
    const decisions = events.filter((event) => event.type === 'permission/decision').map((event) => event.data)
    expect(decisions).toEqual([
      { callId: 'call-rm', decision: 'deny', scope: 'once', message: 'keep dist, it is the release' },
      {
        callId: 'call-test1',
        decision: 'allow',
        scope: 'always',
        rule: 'bash(npm test:*)',
        rules: ['bash(npm test:*)'],
        file: local,
      },
      { callId: 'call-test2', decision: 'allow', scope: 'rule', rule: 'bash(npm test:*)' },
      {
        callId: 'call-touch1',
        decision: 'allow',
        scope: 'session',
        rule: 'bash(touch made.txt)',
        rules: ['bash(touch made.txt)'],
      },
      { callId: 'call-touch2', decision: 'allow', scope: 'rule', rule: 'bash(touch made.txt)' },
    ])
    const denied = events.find((event) => event.type === 'tool/result' && event.data.callId === 'call-rm')
    expect(JSON.stringify(denied?.data.content)).toContain(
      'the user declined it and said: \\"keep dist, it is the release\\"',
    )
    expect(events.filter((event) => event.type === 'permission/mode').map((event) => event.data)).toEqual([
      { mode: 'auto', previous: 'ask' },
      { mode: 'read-only', previous: 'auto' },
      { mode: 'plan', previous: 'read-only' },
      { mode: 'ask', previous: 'plan' },
    ])
    const prompts = events.filter((e) => e.type === 'user/message').map((e) => JSON.stringify(e.data))
    expect(prompts.some((text) => text.includes('actually keep dist'))).toBe(true)
    expect(prompts.some((text) => text.includes('touch bang.txt'))).toBe(true)

    tmux.type('ask', '/quit')
    tmux.key('ask', 'Enter')
    await until(() => tmux.exitStatus('ask') !== undefined, 'keel to exit', 10_000, screen)
    expect(tmux.exitStatus('ask')).toBe(0)

    // A cold rebuild from the log shows the same decisions under the same cards.
    tmux.start('again', keel('-c'))
    const again = (history = false) => tmux.screen('again', history)
    await until(() => again().includes('Resumed session'), 'keel -c to start', 60_000, again)
    const rebuilt = again(true)
    expect(rebuilt).toMatch(/● bash rm -rf dist[^\n]*\n {2}✗ denied once by the user: “keep dist/)
    expect(rebuilt).toContain(`✓ allowed always by the user (bash(npm test:*) saved to ${local})`)
    expect(rebuilt).toContain('✓ allowed for this session by the user (bash(touch made.txt))')
    tmux.key('again', 'C-c')
    tmux.key('again', 'C-c')
    await until(() => tmux.exitStatus('again') !== undefined, 'ctrl+c twice to exit', 10_000, again)
  },
  180_000,
)
