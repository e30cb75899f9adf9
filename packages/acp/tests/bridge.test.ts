import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { methods, type RequestError, type SessionUpdate } from '@agentclientprotocol/sdk'
import { makeKeel, waitFor, type Keel, type KeelOptions } from '../../../test-support/harness.ts'
import {
  chunkText,
  connectInProcess,
  DONE_PLAN,
  FIRST_PLAN,
  initialize,
  PLAN_PROMPT,
  planAndRunSteps,
  planEntries,
  processesWith,
  sleepSteps,
  toolTrace,
} from './support.ts'

let keel: Keel | undefined
const open: { close(): Promise<void> }[] = []

afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close()
  await keel?.dispose()
  keel = undefined
})

async function start(steps: NonNullable<KeelOptions['steps']>, plan = false) {
  keel = await makeKeel({ steps })
  const client = connectInProcess(keel, plan)
  open.push(client)
  await initialize(client)
  return { keel, client, agent: client.connection.agent }
}

async function rejection(promise: Promise<unknown>): Promise<RequestError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(Error)
  return error as RequestError
}

describe('initialize and session/new', () => {
  it('advertises what the bridge does: ACP v1, session/load, text, resource-link and image prompts', async () => {
    keel = await makeKeel()
    const client = connectInProcess(keel)
    open.push(client)
    const response = await initialize(client)
    expect(response.protocolVersion).toBe(1)
    expect(response.agentCapabilities).toMatchObject({
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: false },
    })
    expect(response.agentInfo).toMatchObject({ name: 'keel', version: 'test' })
  })

  it('refuses a relative or missing cwd with invalid params, and creates a persisted Keel session otherwise', async () => {
    const { keel, agent } = await start([])
    const relative = await rejection(agent.request(methods.agent.session.new, { cwd: 'some/dir', mcpServers: [] }))
    expect(relative.code).toBe(-32602)
    expect(relative.message).toContain('absolute')
    const missing = await rejection(
      agent.request(methods.agent.session.new, { cwd: join(keel.cwd, 'nope'), mcpServers: [] }),
    )
    expect(missing.code).toBe(-32602)
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    expect(keel.ctx.agents.get(sessionId)?.cwd).toBe(keel.cwd)
    expect(keel.ctx.sessions.pathOf(sessionId)).toMatch(/\.jsonl$/)
  })
})

describe('session/prompt', () => {
  it('streams message and thought chunks, tool calls and their final updates, and no plan by default', async () => {
    const { keel, client, agent } = await start(planAndRunSteps())
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const response = await agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: 'text', text: PLAN_PROMPT },
        { type: 'resource_link', name: 'notes.md', uri: `file://${keel.cwd}/notes.md` },
      ],
    })
    expect(response.stopReason).toBe('end_turn')
    const updates = client.updates(sessionId)
    expect(chunkText(updates, 'agent_message_chunk')).toBe('Working on it. All done.')
    expect(chunkText(updates, 'agent_thought_chunk')).toBe('Plan first, then run it.')
    expect(toolTrace(updates)).toEqual([
      'call call-plan-1 other in_progress',
      'update call-plan-1 completed',
      'call call-bash-1 execute in_progress',
      'update call-bash-1 completed',
      'call call-plan-2 other in_progress',
      'update call-plan-2 completed',
    ])
    const bashCall = updates.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === 'call-bash-1')
    expect(bashCall).toMatchObject({ title: 'echo hello-from-bash', rawInput: { command: 'echo hello-from-bash' } })
    const bashResult = updates.find((u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'call-bash-1')
    expect(JSON.stringify(bashResult)).toContain('hello-from-bash')
    expect(updates.find((u) => u.sessionUpdate === 'tool_call' && u.toolCallId === 'call-plan-1')).toMatchObject({
      title: 'Update plan',
      rawInput: { todos: FIRST_PLAN },
    })
    expect(updates.filter((u) => u.sessionUpdate === 'plan')).toEqual([])
    expect(updates.filter((u) => u.sessionUpdate === 'user_message_chunk')).toEqual([])

    // The text and the resource link became one user message.
    const users = keel.ctx.agents.get(sessionId)!.session.events.filter((e) => e.type === 'user/message')
    expect(users).toHaveLength(1)
    expect(JSON.stringify(users[0]!.data)).toContain(`${keel.cwd}/notes.md`)
  })

  it('with plan on, sends the standing plan as plan updates: one per todo/write, and a clear when the next turn starts', async () => {
    const steps = [...planAndRunSteps(), { text: 'Second turn, no plan.' }]
    const { keel, client, agent } = await start(steps, true)
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: PLAN_PROMPT }] })
    const writes = keel.ctx.agents.get(sessionId)!.session.events.filter((e) => e.type === 'todo/write')
    expect(writes).toHaveLength(2)
    const expected = writes.map((w) =>
      (w.data.todos as { content: string; status: string }[]).map((t) => ({ ...t, priority: 'medium' })),
    )
    expect(planEntries(client.updates(sessionId))).toEqual(expected)
    expect(planEntries(client.updates(sessionId))[1]).toEqual(DONE_PLAN.map((t) => ({ ...t, priority: 'medium' })))
    // The plan update follows the todo_write call it came from.
    const kinds = client
      .updates(sessionId)
      .map((u) => (u.sessionUpdate === 'tool_call' ? `call:${u.toolCallId}` : u.sessionUpdate))
    expect(kinds.indexOf('plan')).toBeGreaterThan(kinds.indexOf('call:call-plan-1'))

    client.clear()
    await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'again' }] })
    expect(planEntries(client.updates(sessionId))).toEqual([[]])
  })

  it('session/cancel mid-command returns cancelled and kills the command within a second', async () => {
    const sleeper = sleepSteps()
    const { keel, client, agent } = await start(sleeper.steps)
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const prompt = agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'sleep please' }],
    })
    await waitFor(() => processesWith(sleeper.marker).length > 0, 'the command to start')
    await agent.notify(methods.agent.session.cancel, { sessionId })
    expect((await prompt).stopReason).toBe('cancelled')
    await waitFor(() => processesWith(sleeper.marker).length === 0, 'the command to be killed', 1000)
    expect(toolTrace(client.updates(sessionId))).toEqual([
      'call call-sleep execute in_progress',
      'update call-sleep failed',
    ])
  })

  it("queues a prompt sent during a turn as steering: the same turn's next request carries it, once", async () => {
    const sleeper = sleepSteps()
    sleeper.steps[0]!.toolCalls[0]!.arguments.command = 'sleep 1.5'
    const { keel, agent } = await start([...sleeper.steps, { text: 'steered' }, { text: 'fresh turn' }])
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const first = agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'one' }] })
    await waitFor(
      () => keel.ctx.agents.get(sessionId)?.queue !== undefined && keel.model.requests.length === 1,
      'the first request',
    )
    await waitFor(() => keel.ctx.agents.get(sessionId)!.session.events.some((e) => e.type === 'tool/call'), 'the sleep')
    const second = agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'two' }] })
    // A client that asked not to queue gets a clear error instead.
    const refused = await rejection(
      agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'three' }],
        _meta: { keel: { whileRunning: 'refuse' } },
      }),
    )
    expect(refused.code).toBe(-32600)
    expect(refused.message).toContain('the client asked to refuse, not queue')
    const bad = await rejection(
      agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'four' }],
        _meta: { keel: { whileRunning: 'later' } },
      }),
    )
    expect(bad.message).toContain('_meta.keel.whileRunning must be')
    expect((await first).stopReason).toBe('end_turn')
    expect((await second).stopReason).toBe('end_turn')
    // One turn, two requests: the second, after the tool result, carries "two" (and nothing refused).
    const texts = (request: (typeof keel.model.requests)[number]) =>
      request.messages
        .filter((m) => m.role === 'user')
        .map((m) => m.content.map((b) => ('text' in b ? b.text : '')).join(''))
    expect(keel.model.requests).toHaveLength(2)
    expect(texts(keel.model.requests[1]!)).toEqual(['one', 'two'])
    const events = keel.ctx.agents.get(sessionId)!.session.events
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
    expect(events.filter((e) => e.type === 'user/message' && e.data.message.source === 'steer')).toHaveLength(1)
    expect(
      (await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'five' }] }))
        .stopReason,
    ).toBe('end_turn')
  })

  it('a follow-up sent during a turn runs as the next turn; cancelling its request takes it back', async () => {
    const { keel, agent } = await start([{ text: 'thinking…', delayMs: 300 }, { text: 'the follow-up' }, { text: 'x' }])
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const first = agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'one' }] })
    await waitFor(() => keel.ctx.agents.get(sessionId)?.status === 'running', 'the first turn')
    const controller = new AbortController()
    const dropped = agent.request(
      methods.agent.session.prompt,
      { sessionId, prompt: [{ type: 'text', text: 'dropped' }], _meta: { keel: { whileRunning: 'follow-up' } } },
      { cancellationSignal: controller.signal },
    )
    const next = agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'then this' }],
      _meta: { keel: { whileRunning: 'follow-up' } },
    })
    await waitFor(() => keel.ctx.agents.get(sessionId)!.queue.size === 2, 'both queued')
    controller.abort()
    await dropped.catch(() => {})
    expect((await first).stopReason).toBe('end_turn')
    expect((await next).stopReason).toBe('end_turn')
    const events = keel.ctx.agents.get(sessionId)!.session.events
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
    const prompts = events.filter((e) => e.type === 'user/message').map((e) => JSON.stringify(e.data.message.content))
    expect(prompts.join()).not.toContain('dropped')
    expect(prompts.at(-1)).toContain('then this')
  })

  it('cancels the turn when the client cancels the prompt request itself ($/cancel_request)', async () => {
    const { keel, agent } = await start([{ text: 'thinking…', hang: true }])
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const controller = new AbortController()
    const prompt = agent.request(
      methods.agent.session.prompt,
      { sessionId, prompt: [{ type: 'text', text: 'one' }] },
      { cancellationSignal: controller.signal },
    )
    await waitFor(() => keel.ctx.agents.get(sessionId)?.status === 'running', 'the turn')
    controller.abort()
    expect((await prompt).stopReason).toBe('cancelled')
    expect(keel.ctx.agents.get(sessionId)!.session.events.at(-1)).toMatchObject({
      type: 'turn/end',
      data: { reason: 'aborted' },
    })
  })

  it('answers a turn that ended in error with a JSON-RPC error, and a step-limit turn with max_turn_requests', async () => {
    const looping = Array.from({ length: 50 }, (_, i) => ({
      when: 'loop',
      toolCalls: [{ id: `loop-${i}`, name: 'no_such_tool', arguments: {} }],
    }))
    const { keel, agent } = await start([
      { when: 'fail', error: { kind: 'bad-request', message: 'the model refused' } },
      ...looping,
    ])
    const failing = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const error = await rejection(
      agent.request(methods.agent.session.prompt, {
        sessionId: failing.sessionId,
        prompt: [{ type: 'text', text: 'fail' }],
      }),
    )
    expect(error.code).toBe(-32603)
    expect(error.message).toContain('the model refused')
    const looped = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const response = await agent.request(methods.agent.session.prompt, {
      sessionId: looped.sessionId,
      prompt: [{ type: 'text', text: 'loop' }],
    })
    expect(response.stopReason).toBe('max_turn_requests')
  })

  it('refuses prompts it cannot represent and sessions it does not know', async () => {
    const { keel, agent } = await start([])
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const image = await rejection(
      agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }],
      }),
    )
    expect(image.code).toBe(-32602)
    expect(image.message).toContain('prompt[0]: the image is not a PNG, JPEG, GIF or WebP image')
    const audio = await rejection(
      agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }],
      }),
    )
    expect(audio.message).toContain('audio content is not accepted')
    const empty = await rejection(
      agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: '  ' }] }),
    )
    expect(empty.code).toBe(-32602)
    const unknown = await rejection(
      agent.request(methods.agent.session.prompt, {
        sessionId: 'no-such-session',
        prompt: [{ type: 'text', text: 'hi' }],
      }),
    )
    expect(unknown.code).toBe(-32002)
  })
})

describe('shutdown', () => {
  it('lets work that outlived a turn land first: agent/before-close is awaited before each agent closes', async () => {
    const { keel, client, agent } = await start([])
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    const seen: { id: string; open: boolean }[] = []
    keel.ctx.on('agent/before-close', async (closing) => {
      await new Promise((done) => setTimeout(done, 50))
      seen.push({ id: closing.id, open: keel.ctx.agents.get(closing.id) !== undefined })
    })
    await client.close()
    expect(seen).toEqual([{ id: sessionId, open: true }])
    expect(keel.ctx.agents.get(sessionId)).toBeUndefined()
  })
})

describe('session/load', () => {
  it('replays a closed session as the live client saw it, then continues it', async () => {
    const steps = [...planAndRunSteps(), { text: 'Continued.' }]
    const { keel, client, agent } = await start(steps, true)
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: PLAN_PROMPT }] })
    const live = client.updates(sessionId)
    await client.close()
    expect(keel.ctx.agents.get(sessionId)).toBeUndefined()

    const reopened = connectInProcess(keel, true)
    open.push(reopened)
    await initialize(reopened)
    const missing = await rejection(
      reopened.connection.agent.request(methods.agent.session.load, {
        sessionId: 'not-a-session',
        cwd: keel.cwd,
        mcpServers: [],
      }),
    )
    expect(missing.code).toBe(-32002)
    expect(
      await reopened.connection.agent.request(methods.agent.session.load, { sessionId, cwd: keel.cwd, mcpServers: [] }),
    ).toEqual({})
    const replayed = reopened.updates(sessionId)
    expect(chunkText(replayed, 'user_message_chunk')).toBe(PLAN_PROMPT)
    expect(chunkText(replayed, 'agent_thought_chunk')).toBe(chunkText(live, 'agent_thought_chunk'))
    expect(chunkText(replayed, 'agent_message_chunk')).toBe(chunkText(live, 'agent_message_chunk'))
    expect(toolTrace(replayed)).toEqual(toolTrace(live))
    const final = (u: SessionUpdate[]) => u.filter((x) => x.sessionUpdate === 'tool_call_update')
    expect(final(replayed)).toEqual(final(live))
    // The standing plan once, at the end (not every historical write).
    expect(planEntries(replayed)).toEqual([DONE_PLAN.map((t) => ({ ...t, priority: 'medium' }))])
    expect(replayed.at(-1)?.sessionUpdate).toBe('plan')

    reopened.clear()
    const next = await reopened.connection.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'more' }],
    })
    expect(next.stopReason).toBe('end_turn')
    expect(chunkText(reopened.updates(sessionId), 'agent_message_chunk')).toBe('Continued.')
    expect(planEntries(reopened.updates(sessionId))).toEqual([[]])
    const turns = keel.ctx.agents
      .get(sessionId)!
      .session.events.filter((e) => e.type === 'turn/start')
      .map((e) => e.data.turn)
    expect(turns).toEqual([1, 2])
  })

  it('sends no plan on load when plan updates are off', async () => {
    const { keel, client, agent } = await start(planAndRunSteps())
    const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: PLAN_PROMPT }] })
    client.clear()
    // Loading a session this connection already holds replays it too.
    await agent.request(methods.agent.session.load, { sessionId, cwd: keel.cwd, mcpServers: [] })
    expect(toolTrace(client.updates(sessionId))).toHaveLength(6)
    expect(client.updates(sessionId, 'plan')).toEqual([])
  })
})
