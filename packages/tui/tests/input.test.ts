// The editor's input side: `@` path completion, Tab, a burst of keys, `!command` and `/model`.
import { linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { lastModelChoice } from '@keel/agent'
import type { ScriptStep } from '@keel/llm'
import * as permissionsPlugin from '@keel/permissions'
import { textOf, type SessionEvent } from '@keel/session'
import { type makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import type { KeelApp } from '../src/app.ts'
import { atToken, KeelAutocomplete, matchPaths, PathIndex } from '../src/complete.ts'
import { foldEvents } from '@keel/door/transcript'
import { modelList, parseModelArg } from '../src/model-switch.ts'
import { parseShellMessage, shellMessage } from '@keel/door/shell-message'
import { appIdle, type StartedApp, startApp, stopApps } from './app-harness.ts'
import { plainLines, processRunning, type RecordingTerminal } from './support.ts'

let keel: Keel | undefined
const dirs: string[] = []
afterEach(async () => {
  await stopApps()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'keel-complete-'))
  dirs.push(root)
  // A file whose text was written already is a hard link to that one: on some disks linking costs a tenth of
  // creating a file, and the big trees here are thousands of empty files.
  const written = new Map<string, string>()
  for (const [path, text] of Object.entries(files)) {
    const full = join(root, path)
    mkdirSync(join(full, '..'), { recursive: true })
    const same = written.get(text)
    if (same) linkSync(same, full)
    else {
      writeFileSync(full, text)
      written.set(text, full)
    }
  }
  return root
}

async function start(steps: ScriptStep[], options: Parameters<typeof makeKeel>[0] = {}): Promise<StartedApp> {
  const started = await startApp(steps, options, { modelSpec: 'scripted/script' })
  keel = started.keel
  return started
}

const screen = (a: KeelApp) => plainLines(a.frame(100)).join('\n')
const idle = (a: KeelApp) => appIdle(a, 'the UI to be idle')
/** Keys typed one after another with no turn of the event loop between them: one burst, as one stdin chunk. */
const burst = (terminal: RecordingTerminal, keys: string) => {
  for (const key of keys) terminal.type(key)
}
const eventsOf = (a: KeelApp, type: string) => a.agent.session.events.filter((event) => event.type === type)

describe('@ path completion', () => {
  test('atToken finds the @word before the cursor, at a token start only', () => {
    expect(atToken('look at @src/pa')).toBe('@src/pa')
    expect(atToken('@')).toBe('@')
    expect(atToken('mail me@example')).toBeUndefined()
    expect(atToken('look at @src then')).toBeUndefined()
  })

  test('matchPaths: a hit in the file name first, then fuzzy hits across the path; empty query lists the top level', () => {
    const paths = ['README.md', 'src/', 'src/parser/', 'src/parser/lexer.ts', 'src/parse.ts', 'docs/lexicon.md']
    expect(matchPaths(paths, 'lex')).toEqual(['docs/lexicon.md', 'src/parser/lexer.ts'])
    expect(matchPaths(paths, 'parse')[0]).toBe('src/parse.ts')
    expect(matchPaths(paths, 'spl')).toContain('src/parser/lexer.ts')
    expect(matchPaths(paths, '')).toEqual(['README.md', 'src/'])
    expect(matchPaths(paths, 'zzz')).toEqual([])
  })

  test('the index walks with .gitignore: ignored files, node_modules and .git are left out, directories end in /', async () => {
    const root = tree({
      '.gitignore': 'build/\n*.log\n',
      'src/parser/lexer.ts': 'x',
      'build/lexer.js': 'x',
      'debug.log': 'x',
      'node_modules/pkg/index.js': 'x',
      '.git/HEAD': 'ref',
      'README.md': 'x',
    })
    const { paths, complete } = await new PathIndex(root).list()
    expect(complete).toBe(true)
    expect(paths).toContain('src/parser/lexer.ts')
    expect(paths).toContain('src/parser/')
    expect(paths).toContain('README.md')
    expect(paths.filter((path) => /build|debug\.log|node_modules|\.git\//.test(path))).toEqual([])
  })

  test('a walk that runs out of time answers anyway (the shallow fallback), flagged incomplete', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 2000; i++) files[`d${i % 30}/e${i % 7}/f${i}.txt`] = ''
    const index = new PathIndex(tree(files), 1)
    const listing = await index.list()
    expect(listing.complete).toBe(false)
  })

  test('the provider answers @ with paths and inserts the chosen one; it knows which text its answer was for', async () => {
    const root = tree({ 'src/parser/lexer.ts': 'x', 'a b.txt': 'x' })
    const provider = new KeelAutocomplete([], new PathIndex(root))
    const signal = new AbortController().signal
    const lines = ['look at @lex']
    const answer = await provider.getSuggestions(lines, 0, lines[0]!.length, { signal })
    expect(answer?.prefix).toBe('@lex')
    expect(answer?.items.map((item) => item.value)).toEqual(['@src/parser/lexer.ts'])
    const applied = provider.applyCompletion(lines, 0, lines[0]!.length, answer!.items[0]!, answer!.prefix)
    expect(applied.lines[0]).toBe('look at @src/parser/lexer.ts ')
    expect(provider.isCurrent(lines, { line: 0, col: lines[0]!.length })).toBe(true)
    expect(provider.isCurrent(['look at @lexe'], { line: 0, col: 12 })).toBe(false)
    const spaced = await provider.getSuggestions(['@a b'], 0, 2, { signal })
    expect(spaced?.items[0]?.value).toBe('@"a b.txt"')
  })

  test('in the editor: @ opens the menu, Tab inserts the path; Tab completes a plain path too', async () => {
    const { app, terminal } = await start([])
    mkdirSync(join(keel!.cwd, 'src/parser'), { recursive: true })
    writeFileSync(join(keel!.cwd, 'src/parser/lexer.ts'), 'x')
    burst(terminal, 'see @lexer')
    await waitFor(() => app.editor.isShowingAutocomplete() && screen(app).includes('src/parser/lexer.ts'), 'the menu')
    terminal.type('\t')
    expect(app.editor.getText()).toBe('see @src/parser/lexer.ts ')
    app.editor.setText('')
    burst(terminal, 'cat src/pa')
    terminal.type('\t')
    await waitFor(() => app.editor.getText() === 'cat src/parser/', 'Tab to complete the directory')
  })
})

describe('a burst of keys', () => {
  test("'plan' and Enter typed after the / menu opened submit /plan, not the menu's stale selection", async () => {
    const { app, terminal } = await start([])
    terminal.type('/')
    await waitFor(() => app.editor.isShowingAutocomplete(), 'the / menu')
    burst(terminal, 'plan\r')
    await waitFor(() => screen(app).includes('No plan has been written'), '/plan to run')
    expect(screen(app)).toContain('› /plan')
    expect(screen(app)).not.toContain('Unknown command')
    expect(app.editor.getText()).toBe('')
  })

  test('/ plan Enter in one chunk, and a prompt in one chunk, submit exactly what was typed', async () => {
    const { app, terminal } = await start([{ text: 'answered' }])
    burst(terminal, '/plan\r')
    await waitFor(() => screen(app).includes('No plan has been written'), '/plan to run')
    burst(terminal, 'hello there\r')
    await idle(app)
    expect(screen(app)).toContain('› hello there')
  })

  test('Enter on a menu that is current still picks its selection', async () => {
    const { app, terminal } = await start([])
    burst(terminal, '/pl')
    await waitFor(() => app.editor.isShowingAutocomplete() && screen(app).includes('→ plan'), 'the menu for /pl')
    terminal.type('\r')
    await waitFor(() => screen(app).includes('No plan has been written'), '/plan to run')
  })
})

describe('!command', () => {
  test('shellMessage and parseShellMessage round-trip; other text is kept whole', () => {
    const text = shellMessage('echo "a\nb"', 'a\nb\n[exit code 0 · 0.0 s]')
    expect(text).toContain('The user ran a shell command')
    expect(parseShellMessage(text)).toEqual({ command: 'echo "a\nb"', output: 'a\nb\n[exit code 0 · 0.0 s]' })
    expect(parseShellMessage('plain')).toEqual({ command: '', output: 'plain' })
  })

  test('runs, shows the command and output, and the next model request carries it as a user message', async () => {
    const { app } = await start([{ text: 'I saw it' }])
    app.submit('!echo marker-$((6*7))')
    await idle(app)
    const [event] = eventsOf(app, 'user/message') as SessionEvent<'user/message'>[]
    expect(event?.data.message.source).toBe('shell')
    expect(textOf(event!.data.message.content)).toContain('marker-42')
    expect(screen(app)).toContain('! echo marker-$((6*7))')
    expect(screen(app)).toContain('│ marker-42')
    app.submit('what did I run?')
    await idle(app)
    const request = keel!.model.requests[0]!
    const shell = request.messages.find((m) => m.role === 'user' && textOf(m.content).includes('marker-42'))
    expect(shell).toBeDefined()
    expect(textOf(request.messages.at(-1)!.content)).toBe('what did I run?')
    // The same transcript after a cold rebuild from the log.
    expect(foldEvents(app.agent.session.events).entries.map((entry) => entry.kind)).toEqual([
      'shell',
      'user',
      'assistant',
    ])
  })

  test("ask mode runs the person's own command without asking: they typed it", async () => {
    const { app } = await start([], {
      plugins: [[permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }]],
    })
    const target = join(keel!.cwd, 'made.txt')
    let asked = false
    keel!.ctx.on('permission/ask', () => {
      asked = true
    })
    app.submit('!touch made.txt')
    await idle(app)
    expect(asked).toBe(false)
    expect(app.prompt.active).toBeUndefined()
    expect(eventsOf(app, 'user/message')).toHaveLength(1)
    const { existsSync } = await import('node:fs')
    expect(existsSync(target)).toBe(true)
  })

  test('a deny rule refuses without asking', async () => {
    const { app } = await start([], {
      plugins: [
        [permissionsPlugin, { mode: 'yolo', allow: [], deny: ['bash(rm:*)'], sandbox: { allowedDomains: [] } }],
      ],
    })
    writeFileSync(join(keel!.cwd, 'keep.txt'), 'x')
    app.submit('!rm keep.txt')
    await idle(app)
    expect(screen(app)).toContain('! rm keep.txt was not run: denied by the rule bash(rm:*)')
    expect(eventsOf(app, 'user/message')).toEqual([])
  })

  test('Esc cancels a running command: it is killed, and the run is recorded as cancelled', async () => {
    const { app, terminal } = await start([])
    app.submit('!sleep 30.5173; echo never')
    await waitFor(() => screen(app).includes('! sleep 30.5173') && processRunning('30.5173'), 'the command to run')
    terminal.type('\x1b')
    await idle(app)
    const [event] = eventsOf(app, 'user/message') as SessionEvent<'user/message'>[]
    const { output } = parseShellMessage(textOf(event!.data.message.content))
    expect(output).toBe('[cancelled by the user]')
    expect(processRunning('30.5173')).toBe(false)
  })

  test('a prompt typed while a command runs stays in the editor until the command ends', async () => {
    const { app } = await start([{ text: 'after the command' }])
    app.submit('!sleep 0.3; echo done-sleeping')
    app.submit('next question')
    // The agent's queue holds prompts for a turn; a `!command` is no turn, so nothing is queued behind it.
    expect(app.status.queued ?? 0).toBe(0)
    expect(app.editor.getText()).toBe('next question')
    expect(screen(app)).toContain('A command is running')
    await waitFor(
      () => foldEvents(app.agent.session.events).entries.some((entry) => entry.kind === 'shell'),
      'the command to end',
      15_000,
    )
    await new Promise((done) => setTimeout(done, 50))
    app.editor.setText('')
    app.submit('next question')
    await waitFor(() => screen(app).includes('after the command'), 'the prompt to run', 15_000)
    const kinds = foldEvents(app.agent.session.events).entries.map((entry) => entry.kind)
    expect(kinds).toEqual(['shell', 'user', 'assistant'])
  })
})

describe('/model', () => {
  test('parseModelArg and modelList', () => {
    const providers = ['scripted', 'deepseek', 'anthropic']
    expect(parseModelArg('', providers)).toEqual({ kind: 'list' })
    expect(parseModelArg('deepseek/deepseek-v4-flash', providers)).toEqual({
      kind: 'switch',
      spec: 'deepseek/deepseek-v4-flash',
    })
    const nope = parseModelArg('nope', providers)
    expect(nope.kind).toBe('invalid')
    expect(nope.kind === 'invalid' && nope.message.includes('\n')).toBe(false)
    expect(parseModelArg('acme/x', providers)).toEqual({
      kind: 'invalid',
      message: 'Unknown provider acme; known: scripted, deepseek, anthropic.',
    })
    const list = modelList(providers, 'deepseek/deepseek-v4-pro', 'anthropic/claude-x')
    expect(list).toContain('Model: deepseek/deepseek-v4-pro (configured: anthropic/claude-x)')
    // The model in use first, then the provider's current ids; an id the list does not know still shows.
    expect(list).toContain('  deepseek  deepseek-v4-pro, deepseek-v4-flash, deepseek-flash')
    expect(list).toContain('  anthropic  claude-x, claude-opus-5, claude-sonnet-5, claude-haiku-4-5')
    expect(list).toContain('  scripted\n')
  })

  test('switches the model for the next turn, logs session/model, the footer follows; bad input is one line', async () => {
    const { app } = await start([{ text: 'from the first model' }])
    writeFileSync(join(keel!.cwd, 'other.json'), JSON.stringify({ steps: [{ text: 'from the other model' }] }))
    app.submit('/model nope')
    expect(screen(app)).toContain('Usage: /model <provider>/<model>')
    app.submit('/model')
    expect(screen(app)).toContain('Providers:')
    expect(screen(app)).toContain('  scripted  script')
    app.submit('/model scripted/missing.json')
    await waitFor(() => screen(app).includes('Cannot switch to scripted/missing.json'), 'the failure')
    app.submit('/model scripted/other.json')
    await waitFor(() => screen(app).includes('Model: scripted/other.json from the next turn on.'), 'the switch')
    expect(screen(app)).toContain('scripted/other.json · 0 tok')
    expect(eventsOf(app, 'session/model').map((event) => event.data)).toEqual([{ spec: 'scripted/other.json' }])
    expect(lastModelChoice(app.agent.session.events)).toBe('scripted/other.json')
    app.submit('hello')
    await idle(app)
    expect(screen(app)).toContain('from the other model')
    expect(screen(app)).not.toContain('from the first model')
    expect(keel!.model.requests).toHaveLength(0)
  })

  test('typing /model offers the providers and the model in use', async () => {
    const { app, terminal } = await start([])
    burst(terminal, '/model scr')
    await waitFor(() => app.editor.isShowingAutocomplete() && screen(app).includes('scripted/script'), 'the menu')
    expect(screen(app)).toContain('scripted/')
    expect(screen(app)).not.toContain('deepseek/')
  })

  test('refused while a turn runs', async () => {
    const { app } = await start([{ text: 'slow', delayMs: 2000 }])
    app.submit('go')
    await waitFor(() => app.agent.status === 'running', 'the turn')
    app.submit('/model scripted/other.json')
    expect(screen(app)).toContain('A turn is running')
    expect(eventsOf(app, 'session/model')).toEqual([])
  })
})
