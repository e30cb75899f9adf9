import { CURSOR_MARKER } from '@mariozechner/pi-tui'
import { Type } from 'typebox'
import { appendFileSync, readFileSync } from 'node:fs'
import { afterEach, describe, expect, test, vi } from 'vitest'
import type { ScriptStep } from '@keel/llm'
import * as compactionPlugin from '@keel/compaction'
import * as mcpPlugin from '@keel/mcp'
import * as subagentPlugin from '@keel/subagent'
import type { Session } from '@keel/session'
import { defineTool } from '@keel/tools'
import type { TodoItem } from '@keel/todo'
import { type makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import type { KeelApp } from '../src/app.ts'
import { foldEvents } from '@keel/door/transcript'
import { TranscriptView } from '../src/transcript.ts'
import { subagentPlan } from '../src/subagent.ts'
import { FAULTY } from '../../mcp/tests/support.ts'
import { appIdle, type StartedApp, startApp, stopApps } from './app-harness.ts'
import { plain, plainLines, processRunning } from './support.ts'

let keel: Keel | undefined
afterEach(stopApps)

const ESC = '\x1b'
const todos = (...statuses: TodoItem['status'][]) => ({
  todos: statuses.map((status, i) => ({ content: `Step ${i + 1}`, status })),
})

async function start(steps: ScriptStep[], options: Parameters<typeof makeKeel>[0] = {}): Promise<StartedApp> {
  const started = await startApp(steps, options)
  keel = started.keel
  return started
}

const screen = (a: KeelApp, width = 100) => plainLines(a.frame(width)).join('\n')
const idle = appIdle

describe('interactive app (in-process, recording terminal)', () => {
  test('live rendering equals a cold rebuild of the same log, plan panel included', async () => {
    const { app } = await start([
      {
        reasoning: 'Think.',
        text: 'Planning **now**.',
        toolCalls: [
          { name: 'todo_write', arguments: todos('in_progress', 'pending', 'pending') },
          { name: 'bash', arguments: { command: 'printf "a\\nb\\nc\\nd\\ne\\nf\\n"' } },
        ],
      },
      { toolCalls: [{ name: 'todo_write', arguments: todos('completed', 'in_progress', 'pending') }] },
      { text: 'Halfway.' },
    ])
    app.submit('make a plan')
    await idle(app)
    const cold = new TranscriptView({ present: (name, args) => keel!.ctx.tools.present(name, args) })
    cold.reset(foldEvents(app.agent.session.events))
    cold.banner = app.transcript.banner
    expect(cold.render(100)).toEqual(app.transcript.render(100))
    const text = screen(app)
    expect(text).toContain('› make a plan')
    expect(text).toContain('Planning now.')
    expect(text).toContain('✻ Thought for 1 line')
    expect(text).toMatch(/● bash printf .*\d\.\ds/)
    expect(text).toContain('  │ … 3 earlier lines  ctrl+o to expand\n  │ d\n  │ e\n  │ f\n  │ [exit code 0')
    expect(text).toContain('● todo_write 1/3 done · Step 2')
    expect(text).toContain('Plan 1/3 · 1 in progress\n  ✓ Step 1\n  ◐ Step 2\n  ○ Step 3')
    // Footer: model, tokens, session id, cwd.
    expect(text).toMatch(new RegExp(`scripted/test · [\\d.]+k? tok · session ${app.agent.id.slice(0, 8)} · `))
  })

  test('ctrl+o expands tool output and reasoning; ctrl+t expands a long plan', async () => {
    const long = {
      todos: Array.from({ length: 10 }, (_, i) => ({
        content: `Item ${i + 1}`,
        status: i === 0 ? 'in_progress' : 'pending',
      })),
    }
    const { app, terminal } = await start([
      {
        reasoning: 'Secret thoughts.',
        toolCalls: [
          { name: 'todo_write', arguments: long },
          { name: 'bash', arguments: { command: 'seq 1 9' } },
        ],
      },
      { text: 'ok' },
    ])
    app.submit('go')
    await idle(app)
    expect(screen(app)).not.toContain('Secret thoughts.')
    expect(screen(app)).not.toContain('│ 1\n')
    expect(screen(app)).toContain('+5 more')
    terminal.type('\x0f')
    expect(screen(app)).toContain('Secret thoughts.')
    expect(screen(app)).toContain('│ 1\n')
    terminal.type('\x14')
    expect(screen(app)).toContain('  ○ Item 10')
    expect(screen(app)).not.toContain('+5 more')
  })

  test('the plan is replaced on each write, kept at turn end and cleared when the next turn starts', async () => {
    const { app } = await start([
      { toolCalls: [{ name: 'todo_write', arguments: todos('in_progress', 'pending') }] },
      { toolCalls: [{ name: 'todo_write', arguments: todos('completed', 'completed') }] },
      { text: 'All done.' },
      { text: 'Second answer.', delayMs: 5 },
    ])
    app.submit('first')
    await idle(app)
    expect(screen(app)).toContain('Plan 2/2\n  ✓ Step 1\n  ✓ Step 2')
    app.submit('second')
    await idle(app)
    expect(screen(app)).not.toMatch(/^Plan /m)
    app.submit('/plan')
    expect(screen(app)).toContain('Last Plan 2/2 (cleared when a later turn started)\n    1. ✓ Step 1\n    2. ✓ Step 2')
  })

  test('a running bash call shows its card and the streamed text; esc cancels the turn, keeps the queue and kills the command', async () => {
    const marker = `keel-tui-${process.pid}-${Date.now()}`
    const { app, terminal } = await start([
      {
        text: 'Streaming words arrive one by one',
        delayMs: 1,
        toolCalls: [{ name: 'bash', arguments: { command: `sleep 30; echo ${marker}` } }],
      },
      { text: 'never', hang: true },
    ])
    app.submit('run it')
    await waitFor(() => screen(app).includes('running'), 'the bash card to run')
    expect(screen(app)).toContain('Streaming words arrive one by one')
    expect(screen(app)).toMatch(/working [\d.]+s · bash [\d.]+s · esc to cancel/)
    app.submit('follow-up while running')
    expect(screen(app)).toContain('1 queued')
    await waitFor(() => processRunning(marker), 'the command to start')
    terminal.type(ESC)
    // The bounds are far under the command's 30 s: a cancel that waited for the command to end would time out.
    expect(screen(app)).toContain('Cancelling…')
    await waitFor(() => screen(app).includes('⏹ cancelled'), 'the turn to end cancelled', 10_000)
    // Gone once the turn has ended, not after a fixed time: no key press is needed to clear it.
    await idle(app)
    expect(app.status.cancelling).toBe(false)
    expect(screen(app)).not.toContain('Cancelling…')
    const turnEnd = app.agent.session.events.findLast((event) => event.type === 'turn/end')
    expect(turnEnd?.data).toMatchObject({ reason: 'aborted' })
    // The card says cancelled, not error; the bare notice under it would only repeat that.
    expect(screen(app)).toMatch(/● bash sleep 30.* cancelled [\d.]+s/)
    expect(screen(app)).not.toContain('✗ [cancelled by the user]')
    // The queued message was not sent: the agent's queue keeps it, under the editor, and a note says so.
    expect(app.agent.queue.list().map((item) => item.kind)).toEqual(['steer'])
    expect(screen(app)).toContain('1 queued message is kept: it goes with your next prompt')
    expect(screen(app)).toContain('↳ after the running tool calls: follow-up while running')
    expect(app.agent.session.events.filter((event) => event.type === 'turn/start')).toHaveLength(1)
    // The command's process group is gone (bash -c still carries the marker in its command line).
    await waitFor(() => !processRunning(marker), 'the command to be killed', 10_000)
  })

  test('streamed text shows live, before the assistant message is on the log', async () => {
    const { app, terminal } = await start([{ text: 'partial answer', hang: true }])
    app.submit('hello')
    await waitFor(() => screen(app).includes('partial answer'), 'streamed text')
    expect(app.agent.session.events.some((event) => event.type === 'assistant/message')).toBe(false)
    terminal.type(ESC)
    await idle(app)
    // The partial message is logged on cancel, so the rebuilt transcript keeps what was seen.
    expect(screen(app)).toContain('partial answer')
  })

  test('errors show in red with their one-line reason', async () => {
    const { app } = await start([{ error: { kind: 'server', message: 'the provider fell over\nwith a stack' } }])
    app.submit('hi')
    await idle(app)
    // The words are @keel/door/words' (every door says them); the TUI's style is the red cross.
    const line = app.frame(100).find((l) => plain(l).includes('✗ the turn ended with an error'))
    expect(line).toContain('\x1b[31m')
    expect(plain(line!)).toContain('✗ the turn ended with an error: the provider fell over')
    expect(plain(line!)).not.toContain('with a stack')
  })

  test('slash commands: /help, /sessions, /new, /resume, unknown', async () => {
    const { app } = await start([{ text: 'first answer' }])
    app.submit('remember me')
    await idle(app)
    const firstId = app.agent.id
    app.submit('/help')
    expect(screen(app)).toContain('/sessions')
    expect(screen(app)).toContain('Esc')
    app.submit('/nwe')
    expect(screen(app)).toContain('Unknown command /nwe (did you mean /new?)')
    // /rewind and /resume share a first letter: the guess is by spelling, not by the first letter.
    app.submit('/rewnd')
    expect(screen(app)).toContain('Unknown command /rewnd (did you mean /rewind?)')
    app.submit('/new')
    expect(app.agent.id).not.toBe(firstId)
    expect(screen(app)).not.toContain('remember me')
    expect(screen(app)).toContain('Started a new session.')
    app.submit('/sessions')
    expect(screen(app)).toContain(`  ${firstId}`)
    expect(screen(app)).toContain('remember me')
    app.submit(`/resume ${firstId.slice(0, 8)}`)
    expect(app.agent.id).toBe(firstId)
    expect(screen(app)).toContain('› remember me')
    expect(screen(app)).toContain('first answer')
  })

  test("/resume reads the session's log once, and says what its reopening repaired", async () => {
    const { app } = await start([{ text: 'first answer' }])
    app.submit('remember me')
    await idle(app)
    const firstId = app.agent.id
    app.submit('/new')
    // The log as a crash leaves it: a turn begun and never ended.
    const file = keel!.ctx.sessions.pathOf(firstId)!
    const seq = readFileSync(file, 'utf8').trim().split('\n').length - 1
    appendFileSync(
      file,
      `${JSON.stringify({ type: 'turn/start', seq, time: Date.now(), data: { turn: 2, trigger: 'prompt' } })}\n`,
    )
    const read = vi.spyOn(keel!.ctx.sessions, 'read')
    app.submit(`/resume ${firstId}`)
    await waitFor(() => app.agent.id === firstId, 'the resumed session')
    expect(read).not.toHaveBeenCalled()
    expect(screen(app)).toContain('turn 2 was left open by a crash; closed it as interrupted')
    expect(screen(app)).toContain('first answer')
  })

  test('ctrl+c once clears, twice exits; ctrl+d on an empty editor exits', async () => {
    const first = await start([])
    first.terminal.type('abc')
    expect(first.app.editor.getText()).toBe('abc')
    first.terminal.type('\x03')
    expect(first.app.editor.getText()).toBe('')
    expect(screen(first.app)).toContain('Press Ctrl+C again to exit')
    first.terminal.type('\x03')
    await expect(first.done).resolves.toBe(0)
    await stopApps()
    const second = await start([])
    second.terminal.type('\x04')
    await expect(second.done).resolves.toBe(0)
  })

  test('model text, tool output and todo content cannot drive the terminal', async () => {
    const evil = 'OSC \x1b]0;pwned\x07 CSI \x1b[2J C1 \u009b31m BEL \x07 DEL \x7f'
    const { app, terminal } = await start([
      {
        reasoning: `thinking ${evil}`,
        text: `Text ${evil} [link](https://example.com/\x1b]8;;x)`,
        toolCalls: [
          { name: 'todo_write', arguments: { todos: [{ content: `Todo ${evil}`, status: 'in_progress' }] } },
          { name: 'bash', arguments: { command: `printf 'out \\033]0;pwned\\007 \\033[2J end\\n'` } },
        ],
      },
      { text: 'fine &#27;]0;entity&#7;' },
    ])
    app.submit(`prompt ${evil}`)
    await idle(app)
    terminal.type('\x0f')
    const lines = app.frame(100).map((line) => line.replace(CURSOR_MARKER, ''))
    for (const line of lines) expect(line.replace(/\x1b\[[0-9;]*m/g, '')).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
    const text = screen(app)
    expect(text).toContain('◐ Todo OSC ␛]0;pwned␇ CSI ␛[2J C1 \\x9b31m BEL ␇ DEL ␡')
    // Tool output loses its terminal codes before the log keeps it (stripTerminalCodes): nothing left to escape.
    expect(text).toContain('│ out   end')
    expect(text).toContain('thinking OSC ␛]0;pwned␇')
    expect(text).toContain('(https://example.com/␛]8;;x)')
  })

  test("the subagentPlans projection alone (no ctx.subagents service) nests a running child's plan", async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((done) => {
      release = done
    })
    // A `task` tool that waits and a projection in the shape @keel/subagent registers, without its service.
    const standIn = {
      name: 'subagent-stand-in',
      inject: ['tools', 'projections'],
      apply(ctx: Keel['ctx']) {
        ctx.tools.register(
          defineTool({
            name: 'task',
            description: 'stand-in',
            parameters: Type.Object({ description: Type.String() }),
            presentCall: (args) => ({ title: args.description, kind: 'other', rawInput: args }),
            execute: async () => {
              await gate
              return 'child done'
            },
          }),
        )
        const register = ctx.projections.register.bind(ctx.projections) as unknown as (definition: {
          key: string
          version: number
          init(): unknown
          apply(state: unknown, event: { type: string; data: { callId: string; name: string } }): unknown
        }) => () => void
        register({
          key: 'subagentPlans',
          version: 1,
          init: () => ({}),
          apply: (state, event) =>
            event.type === 'tool/call' && event.data.name === 'task'
              ? {
                  ...(state as object),
                  [event.data.callId]: {
                    sessionId: 'child-1',
                    description: 'Audit the parser',
                    status: 'running',
                    todos: [
                      { content: 'Read \x1b[2J grammar', status: 'completed' },
                      { content: 'Write tests', status: 'in_progress' },
                    ],
                  },
                }
              : state,
        })
      },
    }
    const { app } = await start(
      [{ toolCalls: [{ name: 'task', arguments: { description: 'Audit the parser' } }] }, { text: 'child finished' }],
      { plugins: [[standIn]] },
    )
    app.submit('delegate')
    await waitFor(() => screen(app).includes('● task Audit the parser'), 'the task card')
    const card = app.state.entries.find((entry) => entry.kind === 'tool')
    const callId = card?.kind === 'tool' ? card.callId : ''
    expect(subagentPlan(keel!.ctx, app.agent.session as Session, callId)?.todos).toHaveLength(2)
    expect(screen(app)).toContain('● task Audit the parser  running')
    expect(screen(app)).toContain(
      '    Audit the parser 1/2 · 1 in progress\n      ✓ Read ␛[2J grammar\n      ◐ Write tests',
    )
    release()
    await idle(app)
  })

  test('without @keel/subagent the task card has no nested plan and nothing breaks', async () => {
    const { app } = await start([{ toolCalls: [{ name: 'task', arguments: { description: 'x' } }] }, { text: 'ok' }])
    app.submit('delegate')
    await idle(app)
    expect(subagentPlan(keel!.ctx, app.agent.session, 'missing')).toBeUndefined()
    expect(screen(app)).toMatch(/● task {2}error/)
  })

  test("a real @keel/subagent child's live plan nests under its task card", async () => {
    const child = (statuses: TodoItem['status'][]) => ({
      todos: [
        { content: 'Read the grammar', status: statuses[0] },
        { content: 'Write tests', status: statuses[1] },
      ],
    })
    const { app } = await start(
      [
        {
          when: 'delegate please',
          toolCalls: [{ name: 'task', arguments: { description: 'Audit parser', prompt: 'CHILD: audit the parser' } }],
        },
        {
          when: 'CHILD',
          toolCalls: [
            { name: 'todo_write', arguments: child(['in_progress', 'pending']) },
            { name: 'bash', arguments: { command: 'sleep 1.5' } },
          ],
        },
        { when: 'CHILD', toolCalls: [{ name: 'todo_write', arguments: child(['completed', 'completed']) }] },
        { when: 'CHILD', text: 'child done' },
        { when: 'delegate please', text: 'parent done' },
      ],
      { plugins: [[subagentPlugin, { maxDepth: 1, maxConcurrent: 2 }]] },
    )
    app.submit('delegate please')
    await waitFor(() => screen(app).includes('      ◐ Read the grammar'), 'the child plan under the task card', 10_000)
    expect(screen(app)).toMatch(
      /● task Audit parser {2}running\n(.*\n)* {4}Audit parser 0\/2 · 1 in progress\n {6}◐ Read the grammar\n {6}○ Write tests/,
    )
    // The parent's own plan panel is not the child's.
    expect(screen(app)).not.toMatch(/^Plan /m)
    await idle(app)
    expect(screen(app)).toContain('    Audit parser plan 2/2')
    expect(screen(app)).toContain('parent done')
  })
})

describe('/compact', () => {
  test('summarises older turns; the marker shows live and after a cold rebuild', async () => {
    const { app } = await start(
      [
        { text: 'first answer, long enough to be worth summarising later' },
        { text: 'second answer' },
        { text: 'Summary: two questions were asked and answered.' },
        { text: 'third answer' },
      ],
      { plugins: [[compactionPlugin, { auto: false, keepTurns: 1 }]] },
    )
    for (const prompt of ['one', 'two']) {
      app.submit(prompt)
      await idle(app)
    }
    app.submit('/compact')
    await waitFor(() => /Summarised \d+ messages/.test(screen(app)), 'the compaction outcome')
    expect(screen(app)).toContain('(takes effect with your next message)')
    app.submit('three')
    await idle(app)
    await waitFor(() => screen(app).includes('── context compacted:'), 'the marker')
    expect(screen(app)).toMatch(/── context compacted: \d+ messages summarised, ~\d+ → ~\d+ tokens ──/)
    // The summary is not shown as something the person typed, and a cold rebuild shows the same marker.
    expect(screen(app)).not.toContain('Summary: two questions')
    expect(foldEvents(app.agent.session.events).entries.filter((entry) => entry.kind === 'compaction')).toHaveLength(1)
  })

  test('without the compaction plugin it says so', async () => {
    const { app } = await start([])
    app.submit('/compact')
    await waitFor(() => screen(app).includes('Compaction is not loaded'), 'the warning')
  })
})

describe('notices', () => {
  test("a broken MCP server's warning (a keel/notice) shows as a note", async () => {
    const broken = { ...FAULTY, env: { FAULTY_FAIL_AT_START: '1' } }
    const config = {
      servers: { broken },
      projectFile: false,
      startTimeoutMs: 20_000,
      callTimeoutMs: 20_000,
      maxResultChars: 25_000,
    }
    const { app } = await start([{ text: 'ok' }], { plugins: [[mcpPlugin, config]] })
    app.submit('hi') // the servers start with the first turn
    await waitFor(() => screen(app).includes('mcp server broken failed to start'), 'the notice', 20_000)
    // A note wraps at the terminal's width.
    expect(screen(app).replace(/\s+/g, ' ')).toMatch(/mcp server broken failed to start: .*missing database url/)
  })
})
