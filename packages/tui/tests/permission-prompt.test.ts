import { visibleWidth } from '@mariozechner/pi-tui'
import { afterEach, describe, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import type { PermissionAsk } from '@keel/permissions'
import type { SessionEvent } from '@keel/session'
import { waitFor } from '../../../test-support/harness.ts'
import { foldEvents } from '@keel/door/transcript'
import { SETTLE_MS } from '../src/deliberate.ts'
import { choicesOf, PermissionPrompt } from '../src/permission-prompt.ts'
import { TranscriptView } from '../src/transcript.ts'
import { startApp, stopApps } from './app-harness.ts'
import { plainLines } from './support.ts'

const ask = (over: Partial<PermissionAsk> = {}): PermissionAsk => ({
  sessionId: 's1',
  callId: 'c1',
  tool: 'bash',
  summary: 'bash: rm -rf build',
  detail: 'rm -rf build',
  suggestedRules: ['bash(rm -rf build)'],
  sessionRules: ['bash(rm -rf build)'],
  files: { local: '/repo/.keel/settings.local.json', project: '/repo/.keel/settings.json' },
  ...over,
})

/** A clock the test moves: the prompt's pause in typing is measured on it. */
function clock() {
  let now = 1_000_000
  return { now: () => now, pass: (ms = SETTLE_MS) => (now += ms) }
}
const ENTER = '\r'
const DOWN = '\x1b[B'
const UP = '\x1b[A'

describe('permission prompt', () => {
  test('shows the detail in full above the summary and numbered choices that name the files; nothing when no ask waits', () => {
    const prompt = new PermissionPrompt()
    expect(prompt.render(80)).toEqual([])
    const detail = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`).join('\n')
    void prompt.asker(ask({ detail, reason: 'the command may change things' }), new AbortController().signal)
    const lines = plainLines(prompt.render(100))
    expect(lines[1]).toBe('  ◆ Allow bash: rm -rf build?')
    expect(lines[2]).toBe('    the command may change things')
    expect(lines.filter((line) => line.startsWith('  │ line '))).toHaveLength(60)
    expect(lines.slice(-7)).toEqual([
      '  ❯ 1. Allow once',
      '    2. Allow for this session  bash(rm -rf build)',
      '    3. Always allow  bash(rm -rf build) → .keel/settings.local.json',
      '    4. Always allow, for everyone  bash(rm -rf build) → .keel/settings.json',
      '    5. Deny',
      '    6. Deny, and tell the model why…',
      '  ↑↓ or 1-6 choose · enter confirms · esc denies',
    ])
    // No rule can cover the call: only once and deny.
    expect(choicesOf(ask({ suggestedRules: [], sessionRules: [] })).map((c) => c.label)).toEqual([
      'Allow once',
      'Deny',
      'Deny, and tell the model why…',
    ])
  })

  test('an answer is chosen and confirmed with Enter after a pause; letters go on to the editor and answer nothing', async () => {
    for (const [keys, expected] of [
      [[ENTER], { decision: 'allow', scope: 'once' }],
      [[DOWN, ENTER], { decision: 'allow', scope: 'session' }],
      [['3', ENTER], { decision: 'allow', scope: 'always', file: 'local' }],
      [['4', ENTER], { decision: 'allow', scope: 'always', file: 'project' }],
      [[UP, UP, ENTER], { decision: 'deny', scope: 'once' }],
      [['\x1b'], { decision: 'deny', scope: 'once' }],
    ] as const) {
      const time = clock()
      const prompt = new PermissionPrompt({ now: time.now })
      let settled: unknown
      void prompt.asker(ask(), new AbortController().signal).then((a) => (settled = a))
      // The sentence the person was typing when the prompt opened: no key of it answers.
      for (const char of 'actually keep dist 1') expect(prompt.handleKey(char)).toBe(false)
      expect(prompt.handleKey(ENTER)).toBe(true) // held back: the person was typing
      await Promise.resolve()
      expect(settled).toBeUndefined()
      time.pass()
      for (const key of keys) expect(prompt.handleKey(key)).toBe(true)
      await Promise.resolve()
      expect(settled).toEqual(expected)
      expect(prompt.render(80)).toEqual([])
      expect(prompt.handleKey(ENTER)).toBe(false) // no prompt: the key is the editor's
    }
  })

  test('"deny, and tell the model why" takes a sentence; Esc goes back to the choices', async () => {
    const time = clock()
    const prompt = new PermissionPrompt({ now: time.now })
    const answer = prompt.asker(ask(), new AbortController().signal)
    time.pass()
    prompt.handleKey('6')
    prompt.handleKey(ENTER)
    expect(plainLines(prompt.render(80)).join('\n')).toContain('Why? The model reads this with the denial:')
    prompt.handleKey('\x1b')
    expect(plainLines(prompt.render(80)).join('\n')).toContain('❯ 6. Deny, and tell the model why…')
    prompt.handleKey(ENTER)
    for (const char of 'keep dist') expect(prompt.handleKey(char)).toBe(true)
    expect(plainLines(prompt.render(80)).join('\n')).toContain('keep dist')
    prompt.handleKey(ENTER)
    expect(await answer).toEqual({ decision: 'deny', scope: 'once', message: 'keep dist' })
  })

  test('asks wait in arrival order; an aborted ask leaves the queue as a denial', async () => {
    const prompt = new PermissionPrompt({ sessionLabel: (id) => (id === 'child' ? 'asked by a subagent' : undefined) })
    const first = prompt.asker(ask(), new AbortController().signal)
    const abort = new AbortController()
    const second = prompt.asker(ask({ callId: 'c2', sessionId: 'child', summary: 'edit src/a.ts' }), abort.signal)
    const third = prompt.asker(ask({ callId: 'c3', summary: 'write notes.md' }), new AbortController().signal)
    expect(plainLines(prompt.render(80)).at(-1)).toContain('· 2 more waiting')
    prompt.handleKey('\x1b')
    expect(await first).toEqual({ decision: 'deny', scope: 'once' })
    expect(plainLines(prompt.render(80))[1]).toBe('  ◆ Allow edit src/a.ts?  (asked by a subagent)')
    abort.abort()
    expect(await second).toEqual({ decision: 'deny', scope: 'once' })
    expect(plainLines(prompt.render(80))[1]).toBe('  ◆ Allow write notes.md?')
    prompt.denyAll()
    expect(await third).toEqual({ decision: 'deny', scope: 'once' })
    expect(await prompt.asker(ask({ callId: 'c4' }), AbortSignal.abort())).toEqual({ decision: 'deny', scope: 'once' })
    expect(prompt.waiting).toBe(0)
  })

  test('escapes control characters in every field, colours a diff, and fits narrow widths', () => {
    const prompt = new PermissionPrompt()
    void prompt.asker(
      ask({
        tool: 'edit',
        summary: 'edit a\x1b[31m.ts',
        detail: '--- a.ts\n+++ a.ts\n@@ -1 +1 @@\n-old\x07\n+new',
        suggestedRules: ['edit(a\x1b.ts)'],
      }),
      new AbortController().signal,
    )
    const raw = prompt.render(60).join('\n')
    expect(raw).not.toMatch(/\x1b(?!\[[0-9;]*m)/)
    expect(raw).not.toContain('\x07')
    expect(raw).toContain('\x1b[32m+new')
    expect(raw).toContain('\x1b[31m-old')
    for (const width of [1, 5, 12, 30])
      for (const line of prompt.render(width)) expect(visibleWidth(line)).toBeLessThanOrEqual(width)
  })
})

describe('decisions in the transcript', () => {
  const events = (...rest: { type: string; data: unknown }[]): SessionEvent[] =>
    [
      { type: 'turn/start', data: { turn: 1, trigger: 'user' } },
      {
        type: 'tool/call',
        data: { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{"command":"rm -rf build"}' },
      },
      ...rest,
    ].map((event, seq) => ({ ...event, seq, time: 1000 + seq }) as SessionEvent)

  const render = (log: SessionEvent[], expanded = false) => {
    const view = new TranscriptView({ present: (_name, args) => ({ title: JSON.parse(args).command }) })
    view.reset(foldEvents(log))
    view.expanded = expanded
    return plainLines(view.render(120)).join('\n')
  }

  test('a denial by rule shows under the card instead of the error result', () => {
    const log = events(
      { type: 'permission/decision', data: { callId: 'c1', decision: 'deny', scope: 'rule', rule: 'bash(rm:*)' } },
      {
        type: 'tool/result',
        data: {
          turn: 1,
          step: 1,
          callId: 'c1',
          isError: true,
          content: [{ type: 'text', text: 'Error: bash declined: denied by rule bash(rm:*)' }],
        },
      },
    )
    const text = render(log)
    expect(text).toContain('● bash rm -rf build')
    expect(text).toContain('  ✗ denied by rule bash(rm:*)')
    expect(text).not.toContain('Error: bash declined')
    expect(render(log, true)).toContain('│ Error: bash declined')
  })

  test("a PreToolUse hook's block and its denial show under the card", () => {
    const text = render(
      events(
        {
          type: 'hook/run',
          data: {
            event: 'PreToolUse',
            command: 'guard.sh',
            callId: 'c1',
            exit: 2,
            ms: 4,
            verdict: 'block',
            reason: 'no rm \u001b[31mhere',
          },
        },
        { type: 'permission/decision', data: { callId: 'c1', decision: 'deny', scope: 'hook', message: 'no rm' } },
      ),
    )
    expect(text).toContain('  ✗ denied by a PreToolUse hook: “no rm”')
    expect(text).toContain('  ↳ PreToolUse hook blocked: no rm ␛[31mhere')
  })

  test('an ask the person allowed once', () => {
    const text = render(
      events(
        { type: 'permission/request', data: { callId: 'c1', tool: 'bash', summary: 'bash: rm -rf build' } },
        { type: 'permission/decision', data: { callId: 'c1', decision: 'allow', scope: 'once' } },
      ),
    )
    expect(text).toContain('  ✓ allowed once by the user')
    expect(text).not.toContain('waiting')
  })

  test('an "always" answer names the rule and the settings file it went to', () => {
    const text = render(
      events(
        { type: 'permission/request', data: { callId: 'c1', tool: 'bash', summary: 'bash: rm -rf build' } },
        {
          type: 'permission/decision',
          data: {
            callId: 'c1',
            decision: 'allow',
            scope: 'always',
            rule: 'bash(rm -rf build)',
            file: '/repo/.keel/settings.json',
          },
        },
      ),
    )
    expect(text).toContain('  ✓ allowed always by the user (bash(rm -rf build) saved to /repo/.keel/settings.json)')
    // Narrow: wrapped, so the file's name is still all there.
    const view = new TranscriptView({ present: () => ({ title: 'rm -rf build' }) })
    view.reset(
      foldEvents(
        events({
          type: 'permission/decision',
          data: {
            callId: 'c1',
            decision: 'allow',
            scope: 'always',
            rule: 'bash(rm -rf build)',
            file: '/repo/.keel/settings.json',
          },
        }),
      ),
    )
    expect(plainLines(view.render(40)).join('').replace(/\s+/g, '')).toContain('/repo/.keel/settings.json')
  })
})

describe('the app as the asker (in-process, recording terminal)', () => {
  afterEach(stopApps)

  test('registers while it runs; Enter after a pause answers; the live transcript equals the cold rebuild; the notice shows once', async () => {
    const { keel, app, terminal } = await startApp(
      [
        { toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo one > one.txt' } }] },
        { toolCalls: [{ id: 'call-2', name: 'bash', arguments: { command: 'echo two > two.txt' } }] },
        { text: 'Both asked.' },
      ],
      { plugins: [[permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }]] },
      { prompt: 'go' },
    )
    const screen = () => plainLines(app.frame(100)).join('\n')
    await waitFor(() => app.prompt.active?.callId === 'call-1', 'the first ask', 15_000)
    expect(screen()).toContain('◆ Allow bash: echo one > one.txt?')
    await new Promise((done) => setTimeout(done, SETTLE_MS + 50))
    terminal.type('\r')
    await waitFor(() => app.prompt.active?.callId === 'call-2', 'the second ask', 15_000)
    terminal.type('\x1b')
    await waitFor(() => app.agent.status === 'idle', 'the turn to end', 15_000)
    const text = screen()
    expect(text).toMatch(/● bash echo one > one\.txt[^\n]*\n {2}✓ allowed once by the user/)
    expect(text).toMatch(/● bash echo two > two\.txt[^\n]*\n {2}✗ denied once by the user/)
    // Without a sandbox plugin the service says once why every command is asked about.
    expect(text.match(/the sandbox is off/g)).toHaveLength(1)
    const cold = new TranscriptView({ present: (name, args) => keel.ctx.tools.present(name, args) })
    cold.reset(foldEvents(app.agent.session.events))
    cold.banner = app.transcript.banner
    cold.notes = app.transcript.notes
    expect(cold.render(100)).toEqual(app.transcript.render(100))
    await app.quit()
    // Quitting removed the asker: nobody answers now, so an ask is a denial by the mode.
    const agent = keel.agent()
    keel.model.script.steps.push(
      { toolCalls: [{ id: 'call-3', name: 'bash', arguments: { command: 'echo three > three.txt' } }] },
      { text: 'ok' },
    )
    await agent.prompt('again')
    expect(agent.session.events.find((event) => event.type === 'permission/decision')?.data).toMatchObject({
      callId: 'call-3',
      decision: 'deny',
      scope: 'mode',
    })
  })
})
