import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { Type } from 'typebox'
import { sessionFileIo } from '@keel/session'
import { defineTool } from '@keel/tools'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('the agent loop', () => {
  test('turn and step structure: tool/call before the tool runs, tool/result after, in model order', async () => {
    keel = await makeKeel({
      steps: [
        {
          text: 'Looking.',
          toolCalls: [
            { name: 'bash', arguments: { command: 'echo one' } },
            { name: 'bash', arguments: { command: 'echo two' } },
          ],
        },
        { text: 'Both ran.' },
      ],
    })
    const agent = keel.agent()
    const seen: string[] = []
    keel.ctx.on('session/event', (_s, event) => {
      seen.push(event.type)
    })
    const result = await agent.prompt('run two commands')
    expect(result).toMatchObject({ reason: 'completed', text: 'Both ran.', turn: 1, steps: 2, toolCalls: 2 })
    expect(seen).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'assistant/message',
      'tool/call',
      'tool/result',
      'tool/call',
      'tool/result',
      'step/end',
      'step/start',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    const results = agent.session.events.filter((e) => e.type === 'tool/result')
    expect(results.map((e) => textOfContent(e.data.content))).toEqual([
      expect.stringMatching(/^one\n\[exit code 0/),
      expect.stringMatching(/^two\n\[exit code 0/),
    ])
  })

  test('a bad tool argument comes back as isError and the next request contains it', async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { cmd: 'ls' } }] },
        { toolCalls: [{ name: 'no_such_tool', arguments: {} }] },
        { text: 'ok' },
      ],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    const second = keel.model.requests[1]!.messages.at(-1)!
    const block = second.content[0] as { isError: boolean; content: { type: string; text?: string }[] }
    expect(block.isError).toBe(true)
    expect(textOfContent(block.content)).toBe(
      'Error: invalid arguments:\ncommand: is required\ncmd: is not an allowed property',
    )
    const third = keel.model.requests[2]!.messages.at(-1)!
    expect(textOfContent((third.content[0] as { content: { type: string; text?: string }[] }).content)).toMatch(
      /^Error: unknown tool "no_such_tool"; available: /,
    )
  })

  test('cancel during a running bash kills it within 1 s and closes the turn as aborted', async () => {
    keel = await makeKeel({
      steps: [
        {
          toolCalls: [
            { name: 'bash', arguments: { command: 'echo $$ > pid; sleep 30' } },
            { name: 'bash', arguments: { command: 'echo never' } },
          ],
        },
      ],
    })
    const agent = keel.agent()
    const turn = agent.prompt('sleep')
    const pidFile = join(keel.cwd, 'pid')
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim(), 'bash to start')
    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(alive(pid)).toBe(true)
    agent.cancel()
    const result = await turn
    expect(result.reason).toBe('aborted')
    await waitFor(() => !alive(pid), 'sleep to be killed', 1000)
    const events = agent.session.events
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    const results = events.filter((e) => e.type === 'tool/result')
    expect(results).toHaveLength(2)
    expect(textOfContent(results[0]!.data.content)).toMatch(/cancelled by the user/)
    expect(textOfContent(results[1]!.data.content)).toMatch(/cancelled before this tool call started/)
    // Both read "cancelled" in the front ends, not "error": the log says so without matching the wording.
    expect(results.map((e) => e.data.details)).toEqual([{ kind: 'cancelled' }, { kind: 'cancelled' }])
  })

  test('cancel while the model is streaming keeps the visible text and ends the turn aborted', async () => {
    keel = await makeKeel({ steps: [{ text: 'Thinking about it', hang: true }] })
    const agent = keel.agent()
    let streamed = ''
    keel.ctx.on('agent/delta', (_a, delta) => {
      if (delta.kind === 'text') streamed += delta.text
    })
    const turn = agent.prompt('go')
    await waitFor(() => streamed === 'Thinking about it', 'text to stream')
    agent.cancel()
    expect((await turn).reason).toBe('aborted')
    const message = agent.session.events.find((e) => e.type === 'assistant/message')
    expect(message?.data.message.content).toEqual([{ type: 'text', text: 'Thinking about it' }])
  })

  test('a provider error ends the turn with reason error and a one-line message', async () => {
    keel = await makeKeel({ steps: [{ error: { kind: 'auth', message: 'the key was refused (401)' } }] })
    const agent = keel.agent()
    const result = await agent.prompt('go')
    expect(result).toMatchObject({ reason: 'error', message: 'the key was refused (401)' })
    expect(agent.session.events.at(-1)).toMatchObject({
      type: 'turn/end',
      data: { reason: 'error', message: 'the key was refused (401)' },
    })
  })

  test('the step limit ends the turn cleanly', async () => {
    const loop = { toolCalls: [{ name: 'bash', arguments: { command: 'true' } }] }
    keel = await makeKeel({ steps: [loop, loop, loop, loop] })
    const agent = keel.agent({ maxSteps: 3 })
    const result = await agent.prompt('loop forever')
    expect(result.reason).toBe('step-limit')
    expect(agent.session.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'step-limit' } })
  })

  test('concurrency-safe calls overlap; other calls run alone', async () => {
    keel = await makeKeel({
      steps: [
        {
          toolCalls: [
            { name: 'slow', arguments: { id: 'a' } },
            { name: 'slow', arguments: { id: 'b' } },
            { name: 'bash', arguments: { command: 'true' } },
          ],
        },
        { text: 'done' },
      ],
    })
    let running = 0
    let peak = 0
    keel.ctx.tools.register(
      defineTool({
        name: 'slow',
        description: 'waits',
        concurrencySafe: true,
        parameters: Type.Object({ id: Type.String() }),
        async execute(args) {
          running++
          peak = Math.max(peak, running)
          await new Promise((done) => setTimeout(done, 50))
          running--
          return `slow ${args.id}`
        },
      }),
    )
    const agent = keel.agent()
    // fsyncs done by the time each tool/result is published: the overlapping pair shares one, after both.
    let syncs = 0
    const fsync = sessionFileIo.fsync
    sessionFileIo.fsync = (fd) => {
      syncs++
      fsync(fd)
    }
    const syncedAt: number[] = []
    keel.ctx.on('session/event', (_s, event) => {
      if (event.type === 'tool/result') syncedAt.push(syncs)
    })
    try {
      await agent.prompt('go')
    } finally {
      sessionFileIo.fsync = fsync
    }
    expect(peak).toBe(2)
    const results = agent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => textOfContent(e.data.content))
    expect(results.slice(0, 2)).toEqual(['slow a', 'slow b'])
    const [a, b, bash] = syncedAt as [number, number, number]
    // Each batch's fsync comes after its results are published: b shares a's, bash sees only the pair's.
    expect([b - a, bash - b]).toEqual([0, 1])
  })

  test('one turn at a time per agent', async () => {
    keel = await makeKeel({ steps: [{ text: 'a', hang: true }] })
    const agent = keel.agent()
    const first = agent.prompt('one')
    await expect(agent.prompt('two')).rejects.toThrow(/already running a turn/)
    agent.cancel()
    await first
  })

  test('resume continues turn numbers and the next request carries the earlier history', async () => {
    keel = await makeKeel({ steps: [{ text: 'first answer' }, { text: 'second answer' }] })
    const agent = keel.agent()
    await agent.prompt('first question')
    keel.ctx.agents.close(agent)
    const { agent: again, repairs } = keel.ctx.agents.resume(agent.id, { model: keel.model })
    expect(repairs).toEqual([])
    const result = await again.prompt('second question')
    expect(result.turn).toBe(2)
    const request = keel.model.requests[1]!
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(textOfContent(request.messages[1]!.content as never)).toBe('first answer')
    expect(request.sessionId).toBe(agent.id)
  })

  test('the system prompt is short and names the cwd; the tools are in the request, not frozen into the prompt', async () => {
    keel = await makeKeel({ steps: [{ text: 'hi' }] })
    await keel.agent().prompt('hi')
    const system = keel.model.requests[0]!.system
    expect(system).toContain(keel.cwd)
    expect(system).not.toContain('todo_write')
    expect(keel.model.requests[0]!.tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['bash', 'todo_write']),
    )
    expect(system.length).toBeLessThan(800)
  })
})

describe('a failed append (disk full)', () => {
  test('a tool/result that cannot be written fails the turn cleanly; the next turns are well paired and the log reopens', async () => {
    const { sessionFileIo } = await import('@keel/session')
    const original = { ...sessionFileIo }
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo filled' } }] },
        { text: 'after the disk filled' },
        { text: 'on a freed disk' },
      ],
    })
    const agent = keel.agent()
    const path = keel.ctx.sessions.pathOf(agent.id)!
    // The disk fills up while the tool runs: every write from the tool's result on fails with ENOSPC.
    keel.ctx.on('session/event', (_, event) => {
      if (event.type !== 'tool/call') return
      sessionFileIo.write = () => {
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
      }
    })
    try {
      const first = await agent.prompt('fill the disk')
      expect(first).toMatchObject({
        reason: 'error',
        message: `could not write tool/result to the session log ${path}: ENOSPC (no space left on device)`,
      })
      expect(agent.status).toBe('idle')
      // step/end and turn/end could not be written either: memory and disk agree that turn 1 is still open.
      expect(agent.session.last?.type).toBe('tool/call')
      const second = await agent.prompt('still full')
      expect(second).toMatchObject({ reason: 'error', turn: 2, message: expect.stringContaining('ENOSPC') })
      expect(keel.model.requests).toHaveLength(1) // nothing was sent on a log that cannot be written
    } finally {
      Object.assign(sessionFileIo, original)
    }
    const third = await agent.prompt('space again')
    expect(third).toMatchObject({ reason: 'completed', turn: 2, text: 'after the disk filled' })
    // Turn 1 was closed as crash repair would, with an error result for the call; the request was well paired.
    const request = keel.model.requests[1]!
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user'])
    expect((request.messages[2]!.content[0] as { isError: boolean }).isError).toBe(true)
    const types = agent.session.events.map((e) => e.type)
    expect(types.slice(0, 9)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'assistant/message',
      'tool/call',
      'tool/result',
      'step/end',
      'turn/end',
      'turn/start',
    ])
    keel.ctx.agents.close(agent)
    const { agent: again, repairs } = keel.ctx.agents.resume(agent.id, { model: keel.model })
    expect(repairs).toEqual([])
    expect(again.session.events.map((e) => e.type)).toEqual(types)
  })
})
