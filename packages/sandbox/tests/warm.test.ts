// What the sandbox starts, and when (src/index.ts): a command that can reach no host runs with no proxy relays and
// starts no bridge; a turn in a mode that sandboxes starts the runtime while the model thinks, and the first command
// uses that start; a plugin disposed during a warm-up leaves nothing running. Real bubblewrap and socat; the runtime's
// host bridge is a socat child of this process (`UNIX-LISTEN:`), its relays socat processes inside the sandbox.
import { readdirSync, readFileSync } from 'node:fs'
import { afterEach, describe, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import type { PermissionMode } from '@keel/permissions'
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxedLevel, SandboxService } from '@keel/sandbox'
import type { SessionEvent } from '@keel/session'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'

/** The runtime's bridges to its proxy: socat processes this process started. */
function bridges(): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== process.pid) continue
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('UNIX-LISTEN:')) out.push(Number(name))
    } catch {}
  }
  return out
}

/** Lists the programs running in the command's own PID namespace, from inside it. */
const LIST_PROGRAMS = 'cat /proc/[0-9]*/comm'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function start(mode: PermissionMode, steps: NonNullable<Parameters<typeof makeKeel>[0]>['steps'] = []) {
  keel = await makeKeel({
    steps,
    plugins: [
      [permissionsPlugin, { mode, allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      [sandboxPlugin, { allowedDomains: [] }],
    ],
  })
  await waitFor(() => keel!.ctx.get('permissions') && keel!.ctx.get('sandbox'), 'plugins')
  return keel
}

async function bash(k: Keel, sandbox: SandboxedLevel, network?: boolean) {
  const result = await k.ctx.tools.execute({
    callId: 'b',
    name: 'bash',
    arguments: { command: LIST_PROGRAMS },
    agent: k.agent({ persist: false }),
    signal: new AbortController().signal,
    sandbox,
    ...(network ? { network: async () => ({ allowed: false as const, reason: 'not in this test' }) } : {}),
  })
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy()
  return textOfContent(result.content)
}

describe.skipIf(skipWithout('bubblewrap', HAS_BWRAP, 'the sandbox start tests'))('what the sandbox starts', () => {
  // First in the file: the runtime's state is one per process, and once initialised every wrap has the relays.
  test('a command that can reach no host runs without relays and starts no bridge; one that can be asked about has them', async () => {
    const k = await start('auto')
    expect(await bash(k, 'read-only')).not.toContain('socat')
    expect(await bash(k, 'workspace')).not.toContain('socat')
    expect(bridges()).toEqual([])
    // A host may be asked about: the proxy's relays run beside the command.
    expect(await bash(k, 'workspace', true)).toContain('socat')
    expect(bridges()).toHaveLength(1)
  }, 60_000)

  test('in auto mode the runtime starts while the model reasons, and the first command uses that start', async () => {
    const k = await start('auto', [
      {
        reasoning: 'let me think this over for a while',
        delayMs: 250,
        toolCalls: [{ id: 'c1', name: 'bash', arguments: { command: 'echo hi' } }],
      },
      { text: 'done' },
    ])
    const seen = new Set<number>()
    const timer = setInterval(() => {
      for (const pid of bridges()) seen.add(pid)
    }, 20)
    const agent = k.agent()
    const prompt = agent.prompt('go')
    // During the first answer, before any tool call, the bridge is up.
    await waitFor(() => seen.size > 0, 'the bridge during the first request', 10_000)
    expect(agent.session.events.some((e) => e.type === 'tool/call')).toBe(false)
    expect((await prompt).reason).toBe('completed')
    clearInterval(timer)
    const result = agent.session.events.find((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result')!
    expect(textOfContent(result.data.content)).toContain('hi')
    // The command's runtime is the one the warm-up started: the same bridge, never a second.
    expect(bridges()).toEqual([...seen])
  }, 60_000)

  test('a bash call the model starts writing starts it too', async () => {
    const k = await start('auto', [
      { toolCalls: [{ id: 'c1', name: 'bash', arguments: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    const agent = k.agent()
    let during = 0
    // Between the call's first delta and its tool/call event the warm-up has begun (the runtime's code is loading).
    k.ctx.on('session/event', (_session, event) => {
      if (event.type === 'tool/call')
        during = (k.ctx.get('sandbox') as unknown as { loading?: unknown }).loading ? 1 : 0
    })
    expect((await agent.prompt('go')).reason).toBe('completed')
    expect(during).toBe(1)
  }, 60_000)

  test('a call of another tool a step before the first bash starts it, so that command waits for less', async () => {
    const k = await start('auto', [
      {
        toolCalls: [
          { id: 'c1', name: 'todo_write', arguments: { todos: [{ content: 'Look', status: 'in_progress' }] } },
        ],
      },
      { toolCalls: [{ id: 'c2', name: 'bash', arguments: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    const agent = k.agent()
    let started = false
    // By the time the first step's call is logged, the runtime's start (not just its code) is under way.
    k.ctx.on('session/event', (_session, event) => {
      if (event.type === 'tool/call' && event.data.name === 'todo_write')
        started = (k.ctx.get('sandbox') as unknown as { runtime?: unknown }).runtime !== undefined
    })
    expect((await agent.prompt('go')).reason).toBe('completed')
    expect(started).toBe(true)
  }, 60_000)

  for (const [mode, step] of [
    ['yolo', { reasoning: 'let me think this over', delayMs: 150 }],
    ['auto', { text: 'an answer in words alone', delayMs: 150 }],
  ] as const)
    test(`${mode === 'yolo' ? 'yolo mode' : 'an answer in text alone'} starts nothing`, async () => {
      const k = await start(mode, [step])
      let seen = 0
      const timer = setInterval(() => {
        seen += bridges().length
      }, 20)
      expect((await k.agent().prompt('go')).reason).toBe('completed')
      await new Promise((done) => setTimeout(done, 300))
      clearInterval(timer)
      expect(seen).toBe(0)
      expect((k.ctx.get('sandbox') as unknown as { loading?: unknown }).loading).toBeUndefined()
    }, 60_000)

  test('a warm-up the plugin is disposed during leaves nothing running, and starts nothing afterwards', async () => {
    for (const wait of [false, true]) {
      const k = await start('auto')
      const sandbox = k.ctx.get('sandbox') as SandboxService
      sandbox.warm({ network: true })
      // Disposed at once (the probe still running), or once the runtime's start is under way.
      if (wait) await waitFor(() => bridges().length > 0, 'the bridge', 10_000)
      await k.dispose()
      keel = undefined
      // Long enough for a probe to end and a start to spawn its bridge, had either gone on.
      await new Promise((done) => setTimeout(done, 1500))
      expect(bridges(), wait ? 'disposed while starting' : 'disposed while probing').toEqual([])
    }
  }, 60_000)
})
