// `keel acp` as an editor runs it: a child process speaking NDJSON on stdin/stdout, driven by the SDK's client.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { methods, ndJsonStream } from '@agentclientprotocol/sdk'
import { DEFAULT_COMPOSITION } from '@keel/cli'
import { waitFor } from '../../../test-support/harness.ts'
import {
  chunkText,
  DONE_PLAN,
  initialize,
  PLAN_PROMPT,
  planAndRunSteps,
  planEntries,
  processesWith,
  sleepSteps,
  testClient,
  toolTrace,
  type TestClient,
} from './support.ts'

const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const medium = (todos: readonly { content: string; status: string }[]) =>
  todos.map((t) => ({ ...t, priority: 'medium' }))

interface Child {
  test: TestClient
  /** Raw bytes straight to the child's stdin, bypassing the client. */
  writeRaw(text: string): void
  stdoutLines(): string[]
  stderr(): string
  /** Closes stdin (the client hanging up) and resolves with the exit code. */
  hangUp(): Promise<number | null>
  signal(name: NodeJS.Signals): Promise<number | null>
}

function startKeel(args: string[], env: Record<string, string>, cwd: string): Child {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [join(REPO, 'bin/keel.js'), 'acp', ...args], {
    cwd,
    env: { ...process.env, KEEL_ACP_PLAN: '', KEEL_DEBUG: '', ...env, KEEL_DEV: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdin.on('error', () => {}) // writes after the child exits
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8')
  })
  const fromChild = new ReadableStream<Uint8Array>({
    start(controller) {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8')
        controller.enqueue(new Uint8Array(chunk))
      })
      child.stdout.on('end', () => controller.close())
    },
  })
  const toChild = new WritableStream<Uint8Array>({
    write: (chunk) =>
      new Promise<void>((done) => {
        child.stdin.write(chunk, () => done())
      }),
  })
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
  return {
    test: testClient(ndJsonStream(toChild, fromChild)),
    writeRaw: (text) => {
      child.stdin.write(text)
    },
    stdoutLines: () => stdout.split('\n').filter((line) => line !== ''),
    stderr: () => stderr,
    async hangUp() {
      child.stdin.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      try {
        return await exited
      } finally {
        clearTimeout(timer)
      }
    },
    async signal(name) {
      child.kill(name)
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      try {
        return await exited
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/** Runs a scenario; a failure carries the child's stderr, which says why a child died. */
async function scenario(child: Child, run: () => Promise<void>): Promise<void> {
  try {
    await run()
  } catch (error) {
    if (error instanceof Error) error.message += `\n--- keel acp stderr ---\n${child.stderr()}`
    throw error
  }
}

/** Every line the child wrote to stdout is one JSON-RPC 2.0 message, and the output ends with a newline. */
function expectOnlyProtocol(child: Child): void {
  for (const line of child.stdoutLines()) {
    let message: { jsonrpc?: string } | undefined
    expect(() => {
      message = JSON.parse(line)
    }, `not JSON on stdout: ${line}`).not.toThrow()
    expect(message?.jsonrpc, `not JSON-RPC on stdout: ${line}`).toBe('2.0')
  }
}

/** The `permission/decision` events of a session's log file. */
function loggedDecisions(home: string, sessionId: string): unknown[] {
  for (const slug of readdirSync(join(home, 'sessions'))) {
    const file = join(home, 'sessions', slug, `${sessionId}.jsonl`)
    if (!existsSync(file)) continue
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === 'permission/decision')
      .map((event) => event.data)
  }
  return []
}

// Each scenario boots a real process (seconds on a loaded machine), hence the longer timeout.
describe('keel acp over stdio', { timeout: 60_000 }, () => {
  let root: string
  let home: string
  let work: string
  let planSessionId = ''
  const firstSleep = sleepSteps('sleep please')
  const secondSleep = sleepSteps('sleep again')

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'keel-acp-stdio-'))
    home = join(root, 'home')
    work = join(root, 'work')
    mkdirSync(work)
    // Scripts for the two processes: the first plans and runs, and sleeps in another session; the second continues.
    writeFileSync(
      join(root, 'first.json'),
      JSON.stringify({ steps: [...planAndRunSteps(PLAN_PROMPT), ...firstSleep.steps] }),
    )
    writeFileSync(
      join(root, 'second.json'),
      JSON.stringify({
        steps: [
          {
            when: PLAN_PROMPT,
            toolCalls: [
              {
                id: 'call-plan-3',
                name: 'todo_write',
                arguments: { todos: [{ content: 'Follow up', status: 'in_progress' }] },
              },
            ],
          },
          { when: PLAN_PROMPT, text: 'Followed up.' },
          ...secondSleep.steps,
        ],
      }),
    )
    // One command that writes a file: `ask` mode asks about it whether or not the sandbox runs here.
    writeFileSync(
      join(root, 'ask.json'),
      JSON.stringify({
        steps: [
          {
            when: 'write it',
            toolCalls: [{ id: 'call-write', name: 'bash', arguments: { command: 'echo acp > asked.txt' } }],
          },
          { when: 'write it', text: 'Written.' },
        ],
      }),
    )
    // A plugin that writes to stdout every way a plugin can, on every turn.
    writeFileSync(
      join(root, 'noisy.mjs'),
      [
        "export const name = 'noisy'",
        'export function apply(ctx) {',
        "  ctx.on('session/event', (session, event) => {",
        "    if (event.type !== 'turn/start') return",
        "    console.log('noisy: console.log')",
        "    process.stdout.write('noisy: stdout.write\\n')",
        "    ctx.logger('noisy').info('noisy: cordis logger')",
        "    throw new Error('noisy: listener failure')",
        '  })',
        '}',
      ].join('\n'),
    )
    const base = readFileSync(DEFAULT_COMPOSITION, 'utf8')
    writeFileSync(join(root, 'noisy.yml'), `${base}\n- id: noisy\n  name: ./noisy.mjs\n`)
  })

  afterAll(() => rmSync(root, { recursive: true, force: true }))

  it('serves prompts with tool activity and no plan, survives a malformed line, cancels a command, and writes only NDJSON', async () => {
    // KEEL_DEBUG routes the (otherwise silenced) cordis logger to stderr, so this run proves it never reaches stdout.
    const keel = startKeel(
      ['--model', `scripted/${join(root, 'first.json')}`, '--config', join(root, 'noisy.yml')],
      { KEEL_HOME: home, KEEL_DEBUG: '1' },
      work,
    )
    await scenario(keel, async () => {
      const agent = keel.test.connection.agent
      expect((await initialize(keel.test)).agentCapabilities?.loadSession).toBe(true)
      const { sessionId } = await agent.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
      planSessionId = sessionId
      const response = await agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: PLAN_PROMPT }],
      })
      expect(response.stopReason).toBe('end_turn')
      const updates = keel.test.updates(sessionId)
      expect(chunkText(updates, 'agent_message_chunk')).toBe('Working on it. All done.')
      expect(toolTrace(updates)).toEqual([
        'call call-plan-1 other in_progress',
        'update call-plan-1 completed',
        'call call-bash-1 execute in_progress',
        'update call-bash-1 completed',
        'call call-plan-2 other in_progress',
        'update call-plan-2 completed',
      ])
      expect(JSON.stringify(updates)).toContain('hello-from-bash')
      expect(keel.test.updates(sessionId, 'plan')).toEqual([])

      // A line that is not JSON gets a parse error, a batch an invalid-request error (both id null; the SDK client
      // logs "Got response to unknown request"); the connection keeps working.
      keel.writeRaw('{"jsonrpc":"2.0","id":77,"method":\n')
      keel.writeRaw('[{"jsonrpc":"2.0","id":78,"method":"initialize"}]\n')
      const protocolError = (code: number) =>
        keel
          .stdoutLines()
          .map((line) => JSON.parse(line))
          .find((m) => m.error?.code === code)
      await waitFor(() => protocolError(-32700) && protocolError(-32600), 'the protocol errors')
      expect(protocolError(-32700)).toMatchObject({ jsonrpc: '2.0', id: null })
      expect(protocolError(-32600)).toMatchObject({ jsonrpc: '2.0', id: null })
      const sleeper = await agent.request(methods.agent.session.new, { cwd: work, mcpServers: [] })

      const prompt = agent.request(methods.agent.session.prompt, {
        sessionId: sleeper.sessionId,
        prompt: [{ type: 'text', text: 'sleep please' }],
      })
      await waitFor(() => processesWith(firstSleep.marker).length > 0, 'the command to start', 15_000)
      await agent.notify(methods.agent.session.cancel, { sessionId: sleeper.sessionId })
      expect((await prompt).stopReason).toBe('cancelled')
      await waitFor(() => processesWith(firstSleep.marker).length === 0, 'the command to be killed', 1000)
      expect(await keel.hangUp()).toBe(0)
    }).finally(() => keel.hangUp())
    expectOnlyProtocol(keel)
    // What the noisy plugin wrote went to stderr.
    for (const noise of [
      'noisy: console.log',
      'noisy: stdout.write',
      'noisy: cordis logger',
      'noisy: listener failure',
    ]) {
      expect(keel.stderr()).toContain(noise)
    }
  })

  it('asks the client by default (ask mode), and never with --mode yolo', async () => {
    for (const [flags, asks] of [
      [[], true],
      [['--mode', 'yolo'], false],
    ] as const) {
      rmSync(join(work, 'asked.txt'), { force: true })
      const keel = startKeel(['--model', `scripted/${join(root, 'ask.json')}`, ...flags], { KEEL_HOME: home }, work)
      await scenario(keel, async () => {
        const agent = keel.test.connection.agent
        await initialize(keel.test)
        const { sessionId } = await agent.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
        expect(
          (
            await agent.request(methods.agent.session.prompt, {
              sessionId,
              prompt: [{ type: 'text', text: 'write it' }],
            })
          ).stopReason,
        ).toBe('end_turn')
        expect(keel.test.permissionRequests.map((request) => request.toolCall.toolCallId)).toEqual(
          asks ? ['call-write'] : [],
        )
        if (asks)
          expect(loggedDecisions(home, sessionId)).toEqual([{ callId: 'call-write', decision: 'allow', scope: 'once' }])
        expect(readFileSync(join(work, 'asked.txt'), 'utf8')).toBe('acp\n')
        expect(await keel.hangUp()).toBe(0)
      }).finally(() => keel.hangUp())
      expectOnlyProtocol(keel)
    }
  })

  it('with KEEL_ACP_PLAN=1, replays a session on load with its standing plan, streams new plans, and dies cleanly on SIGTERM', async () => {
    expect(planSessionId).not.toBe('')
    const keel = startKeel(
      ['--model', `scripted/${join(root, 'second.json')}`],
      { KEEL_HOME: home, KEEL_ACP_PLAN: '1' },
      work,
    )
    await scenario(keel, async () => {
      const agent = keel.test.connection.agent
      await initialize(keel.test)
      await agent.request(methods.agent.session.load, { sessionId: planSessionId, cwd: work, mcpServers: [] })
      const replayed = keel.test.updates(planSessionId)
      expect(chunkText(replayed, 'user_message_chunk')).toBe(PLAN_PROMPT)
      expect(chunkText(replayed, 'agent_thought_chunk')).toBe('Plan first, then run it.')
      expect(chunkText(replayed, 'agent_message_chunk')).toBe('Working on it. All done.')
      expect(toolTrace(replayed)).toEqual([
        'call call-plan-1 other in_progress',
        'update call-plan-1 completed',
        'call call-bash-1 execute in_progress',
        'update call-bash-1 completed',
        'call call-plan-2 other in_progress',
        'update call-plan-2 completed',
      ])
      expect(planEntries(replayed)).toEqual([medium(DONE_PLAN)])

      keel.test.clear()
      const response = await agent.request(methods.agent.session.prompt, {
        sessionId: planSessionId,
        prompt: [{ type: 'text', text: 'follow up' }],
      })
      expect(response.stopReason).toBe('end_turn')
      // The old plan clears as the turn starts; the new todo_write arrives as the next plan.
      expect(planEntries(keel.test.updates(planSessionId))).toEqual([
        [],
        [{ content: 'Follow up', status: 'in_progress', priority: 'medium' }],
      ])
      expect(chunkText(keel.test.updates(planSessionId), 'agent_message_chunk')).toBe('Followed up.')

      // The editor closing the agent (SIGTERM) mid-command: the command dies with it, and the exit is clean.
      const sleeper = await agent.request(methods.agent.session.new, { cwd: work, mcpServers: [] })
      void agent
        .request(methods.agent.session.prompt, {
          sessionId: sleeper.sessionId,
          prompt: [{ type: 'text', text: 'sleep again' }],
        })
        .catch(() => {})
      await waitFor(() => processesWith(secondSleep.marker).length > 0, 'the command to start', 15_000)
      expect(await keel.signal('SIGTERM')).toBe(0)
      await waitFor(() => processesWith(secondSleep.marker).length === 0, 'the command to be killed', 1000)
    }).finally(() => keel.hangUp())
    expectOnlyProtocol(keel)
  })
})
