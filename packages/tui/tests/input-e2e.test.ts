// The editor's input side in the real `keel` binary in tmux: a burst of keys, `@` completion, `!command` in ask
// mode, `/model` switching from the scripted model to a fake OpenAI-compatible provider on 127.0.0.1, and `keel -c`
// reopening with the chosen model.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'
import { onlySessionEvents } from '../../../test-support/files.ts'
import { writeComposition } from '../../../test-support/composition.ts'

const skip = skipWithout('tmux', HAS_TMUX, 'the terminal input test')
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

let cleanup: (() => Promise<void>) | undefined
afterAll(() => cleanup?.())

/** The text of every user message in an OpenAI request body (Responses `input`, or chat-completions `messages`). */
function userTexts(body: {
  input?: { role?: string; content?: unknown }[]
  messages?: { role: string; content: unknown }[]
}): string[] {
  return (body.input ?? body.messages ?? [])
    .filter((message) => message.role === 'user')
    .map((message) =>
      typeof message.content === 'string'
        ? message.content
        : (message.content as { text?: string }[]).map((part) => part.text ?? '').join(''),
    )
}

test.skipIf(skip)(
  'keel in tmux: a key burst submits what was typed, @ completes paths, !command runs unasked and reaches the model, /model switches and keel -c keeps it',
  async () => {
    const tmux = new Tmux(120, 50)
    const home = mkdtempSync(join(tmpdir(), 'keel-input-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-input-cwd-'))
    let fake: FakeProvider | undefined
    cleanup = async () => {
      tmux.dispose()
      await fake?.close()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    fake = await startFakeProvider([{ text: 'Reply from the fake provider.' }, { text: 'Reopened on the fake.' }])
    // No sandbox in this composition, so ask mode asks about every command (as in permissions-e2e).
    writeComposition(join(cwd, 'keel.yml'), [
      "- { id: fs, name: '@keel/fs' }",
      "- { id: permissions, name: '@keel/permissions' }",
    ])
    writeFileSync(join(cwd, 'script.json'), JSON.stringify({ steps: [{ text: 'Reply from the script.' }] }))
    writeFileSync(join(cwd, '.gitignore'), 'build/\n')
    mkdirSync(join(cwd, 'src/parser'), { recursive: true })
    mkdirSync(join(cwd, 'build'))
    writeFileSync(join(cwd, 'src/parser/lexer.ts'), 'export {}\n')
    writeFileSync(join(cwd, 'build/lexer.js'), '\n')
    const keel = (flags: string) =>
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 OPENAI_BASE_URL='${fake!.url}/v1' OPENAI_API_KEY=test-key node '${join(REPO, 'bin/keel.js')}' --config keel.yml --mode ask ${flags}; echo "[keel exited $?]"; sleep 600`
    const screen = (history = false) => tmux.screen('in', history)
    const has =
      (...parts: string[]) =>
      () => {
        const s = screen()
        return parts.every((part) => s.includes(part))
      }

    tmux.start('in', keel(`--model scripted/script.json`))
    await until(has('SCRIPTED MODEL', 'scripted/script.json · 0 tok'), 'the UI to start', 60_000, screen)

    // The burst: `/plan` and Enter in one send-keys, then `plan` + Enter after the menu for `/` is already open.
    tmux.run('send-keys', '-t', 'in', '/plan', 'Enter')
    await until(has('No plan has been written'), 'the first /plan', 10_000, screen)
    tmux.type('in', '/')
    await until(has('→ help'), 'the / menu', 10_000, screen)
    tmux.run('send-keys', '-t', 'in', 'plan', 'Enter')
    await until(
      () =>
        screen()
          .split('\n')
          .filter((line) => line === '› /plan').length === 2,
      'the second /plan',
      10_000,
      screen,
    )
    expect(screen()).not.toContain('Unknown command')

    // @ completion: the gitignored build/lexer.js is not offered; Tab inserts the path.
    tmux.type('in', 'summarise @lexer')
    await until(has('src/parser/lexer.ts'), 'the @ menu', 10_000, screen)
    expect(screen()).not.toContain('build/lexer.js')
    tmux.key('in', 'Tab')
    await until(has('summarise @src/parser/lexer.ts'), 'the path inserted', 10_000, screen)
    tmux.key('in', 'Enter')
    await until(has('› summarise @src/parser/lexer.ts', 'Reply from the script.'), 'the scripted reply', 20_000, screen)

    // !command in ask mode: the person typed it, so it runs without asking.
    tmux.type('in', '!touch made-by-me.txt')
    tmux.key('in', 'Enter')
    await until(has('! touch made-by-me.txt', '│ [exit code 0'), 'the command to run', 20_000, screen)
    expect(screen(true)).not.toContain('Allow bash: touch made-by-me.txt?')
    expect(existsSync(join(cwd, 'made-by-me.txt'))).toBe(true)

    // /model: a bad spec is one line; a good one switches, logs session/model, and the footer follows.
    tmux.type('in', '/model nope')
    tmux.key('in', 'Enter')
    await until(has('Usage: /model <provider>/<model>'), 'the usage line', 10_000, screen)
    tmux.type('in', '/model openai/gpt-fake')
    tmux.key('in', 'Enter')
    await until(
      has('Model: openai/gpt-fake from the next turn on.', 'openai/gpt-fake · '),
      'the switch',
      20_000,
      screen,
    )
    expect(screen()).not.toContain('SCRIPTED MODEL')

    tmux.type('in', 'what did I just do?')
    tmux.key('in', 'Enter')
    await until(has('Reply from the fake provider.'), 'the fake provider to answer', 30_000, screen)
    expect(fake.requests).toHaveLength(1)
    const body = fake.requests[0]!.body
    expect(body.model).toBe('gpt-fake')
    const texts = userTexts(body)
    expect(texts.at(-1)).toBe('what did I just do?')
    expect(
      texts.some((text) => text.includes('The user ran a shell command') && text.includes('touch made-by-me.txt')),
    ).toBe(true)

    tmux.type('in', '/quit')
    tmux.key('in', 'Enter')
    await until(() => tmux.exitStatus('in') !== undefined, 'keel to exit', 10_000, screen)
    expect(tmux.exitStatus('in')).toBe(0)
    const events = onlySessionEvents(home)
    // The model the session started with (recorded before its first turn), then the switch.
    expect(events.filter((event) => event.type === 'session/model').map((event) => event.data)).toEqual([
      { spec: expect.stringMatching(/^scripted\//) },
      { spec: 'openai/gpt-fake' },
    ])
    const shell = events.find(
      (event) => event.type === 'user/message' && (event.data.message as { source?: string }).source === 'shell',
    )
    expect(shell).toBeDefined()

    // keel -c with no --model: the session's last choice, not the default model.
    tmux.start('again', keel('-c'))
    const again = () => tmux.screen('again')
    await until(() => again().includes('openai/gpt-fake · '), 'keel -c on the chosen model', 60_000, again)
    expect(again()).toContain('! touch made-by-me.txt')
    tmux.type('again', 'still there?')
    tmux.key('again', 'Enter')
    await until(() => again().includes('Reopened on the fake.'), 'the reopened session to answer', 30_000, again)
    expect(fake.requests[1]!.body.model).toBe('gpt-fake')
    tmux.type('again', '/quit')
    tmux.key('again', 'Enter')
    await until(() => /\[keel exited 0\]/.test(again()), 'keel -c to exit', 10_000, again)
  },
  240_000,
)
