// Asking in ACP: @keel/permissions in `ask` mode, the bridge as the asker, the SDK's own client answering
// `session/request_permission` the way an editor's buttons would.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { methods, type RequestPermissionResponse } from '@agentclientprotocol/sdk'
import * as fsPlugin from '@keel/fs'
import * as permissionsPlugin from '@keel/permissions'
import * as subagentPlugin from '@keel/subagent'
import type { SessionEvent } from '@keel/session'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import { connectInProcess, initialize } from './support.ts'

let keel: Keel | undefined
const open: { close(): Promise<void> }[] = []

afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close()
  await keel?.dispose()
  keel = undefined
})

const choose = (optionId: string): RequestPermissionResponse => ({ outcome: { outcome: 'selected', optionId } })

async function start(steps: NonNullable<Parameters<typeof makeKeel>[0]>['steps'], more: [unknown, unknown?][] = []) {
  keel = await makeKeel({
    steps,
    plugins: [
      [fsPlugin, { allowOutsideCwd: false }],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      ...more,
    ],
  })
  const client = connectInProcess(keel)
  open.push(client)
  await initialize(client)
  const { sessionId } = await client.connection.agent.request(methods.agent.session.new, {
    cwd: keel.cwd,
    mcpServers: [],
  })
  return { keel, client, agent: client.connection.agent, sessionId }
}

function decisions(events: readonly SessionEvent[]) {
  return events.filter((event) => event.type === 'permission/decision').map((event) => event.data)
}

describe('session/set_mode', () => {
  it('advertises the modes with the session; set_mode changes the mode, logs it, and tells the client', async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ id: 'call-touch', name: 'bash', arguments: { command: 'touch made.txt' } }] },
        { text: 'ok' },
      ],
      plugins: [
        [fsPlugin, { allowOutsideCwd: false }],
        [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      ],
    })
    const client = connectInProcess(keel)
    open.push(client)
    await initialize(client)
    const agent = client.connection.agent
    const created = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
    expect(created.modes?.currentModeId).toBe('ask')
    expect(created.modes?.availableModes.map((m) => m.id)).toEqual(['ask', 'auto', 'read-only', 'plan'])
    await expect(
      agent.request(methods.agent.session.setMode, { sessionId: created.sessionId, modeId: 'sideways' }),
    ).rejects.toThrow(/unknown mode sideways/)
    await agent.request(methods.agent.session.setMode, { sessionId: created.sessionId, modeId: 'auto' })
    expect(keel.ctx.permissions.mode).toBe('auto')
    await waitFor(() => client.updates(created.sessionId, 'current_mode_update').length === 1, 'the mode update')
    expect(client.updates(created.sessionId, 'current_mode_update')[0]).toMatchObject({ currentModeId: 'auto' })
    // Auto runs the command without asking the client.
    await agent.request(methods.agent.session.prompt, {
      sessionId: created.sessionId,
      prompt: [{ type: 'text', text: 'go' }],
    })
    expect(client.permissionRequests).toEqual([])
    const events = keel.ctx.agents.get(created.sessionId)!.session.events
    expect(events.filter((e) => e.type === 'permission/mode').map((e) => e.data)).toEqual([
      { mode: 'auto', previous: 'ask' },
    ])
  })
})

describe('session/request_permission', () => {
  it('asks the client with allow_once / allow_session / allow_always / reject_once, and does what it chose', async () => {
    const { keel, client, agent, sessionId } = await start([
      { toolCalls: [{ id: 'call-rm', name: 'bash', arguments: { command: 'rm -rf build' } }] },
      { toolCalls: [{ id: 'call-once', name: 'bash', arguments: { command: 'echo once > once.txt' } }] },
      { toolCalls: [{ id: 'call-always', name: 'bash', arguments: { command: 'touch always.txt' } }] },
      {
        toolCalls: [
          { id: 'call-edit', name: 'edit', arguments: { path: 'once.txt', old_string: 'once', new_string: 'twice' } },
        ],
      },
      { text: 'Done.' },
    ])
    const answers = ['reject_once', 'allow_once', 'allow_always', 'allow_once']
    client.respond(() => choose(answers.shift()!))
    const response = await agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'go' }],
    })
    expect(response.stopReason).toBe('end_turn')

    const requests = client.permissionRequests
    expect(requests.map((r) => r.toolCall.toolCallId)).toEqual(['call-rm', 'call-once', 'call-always', 'call-edit'])
    expect(requests[0]!.sessionId).toBe(sessionId)
    expect(requests[0]!.options.map((o) => [o.optionId, o.kind])).toEqual([
      ['allow_once', 'allow_once'],
      ['allow_session', 'allow_always'],
      ['allow_always', 'allow_always'],
      ['reject_once', 'reject_once'],
    ])
    // No rule could allow a redirection to a file: only once and deny are offered.
    expect(requests[1]!.options.map((o) => o.optionId)).toEqual(['allow_once', 'reject_once'])
    expect(requests[0]!.options[1]!.name).toBe('Allow bash(rm -rf build) for this session')
    expect(requests[0]!.options[2]!.name).toBe('Always allow bash(rm -rf build)')
    expect(requests[0]!.toolCall).toMatchObject({
      title: 'rm -rf build',
      kind: 'execute',
      status: 'pending',
      rawInput: { command: 'rm -rf build' },
    })
    expect(requests[0]!.toolCall.content).toEqual([
      { type: 'content', content: { type: 'text', text: 'rm -rf build' } },
    ])
    // An edit shows as a diff of the file.
    expect(requests[3]!.toolCall.content).toEqual([
      { type: 'diff', path: join(keel.cwd, 'once.txt'), oldText: 'once', newText: 'twice' },
    ])

    expect(existsSync(join(keel.cwd, 'once.txt'))).toBe(true)
    expect(readFileSync(join(keel.cwd, 'once.txt'), 'utf8')).toBe('twice\n')
    expect(existsSync(join(keel.cwd, 'always.txt'))).toBe(true)
    const settings = JSON.parse(readFileSync(join(keel.cwd, '.keel/settings.local.json'), 'utf8'))
    expect(settings.permissions.allow).toEqual(['bash(touch always.txt)'])

    const events = keel.ctx.agents.get(sessionId)!.session.events
    expect(decisions(events)).toEqual([
      { callId: 'call-rm', decision: 'deny', scope: 'once' },
      { callId: 'call-once', decision: 'allow', scope: 'once' },
      {
        callId: 'call-always',
        decision: 'allow',
        scope: 'always',
        rule: 'bash(touch always.txt)',
        rules: ['bash(touch always.txt)'],
        file: join(keel.cwd, '.keel/settings.local.json'),
      },
      { callId: 'call-edit', decision: 'allow', scope: 'once' },
    ])
    // The card: in progress, waiting for approval, running again once allowed, then done; a denied call fails.
    const updates = client
      .updates(sessionId)
      .filter((u) => u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update')
    const trace = updates.map((u) => `${u.toolCallId} ${u.status}`)
    expect(trace.filter((line) => line.startsWith('call-rm '))).toEqual([
      'call-rm in_progress',
      'call-rm pending',
      'call-rm failed',
    ])
    expect(trace.filter((line) => line.startsWith('call-once '))).toEqual([
      'call-once in_progress',
      'call-once pending',
      'call-once in_progress',
      'call-once completed',
    ])
    expect(JSON.stringify(updates.filter((u) => u.toolCallId === 'call-rm').at(-1))).toContain('declined')
  })

  it('session/cancel while the client is deciding cancels the request and ends the turn cancelled', async () => {
    const { keel, client, agent, sessionId } = await start([
      { toolCalls: [{ id: 'call-rm', name: 'bash', arguments: { command: 'rm -rf build' } }] },
      { text: 'never reached' },
    ])
    let cancelled = false
    client.respond(
      (_request, signal) =>
        new Promise((done) => {
          signal.addEventListener('abort', () => {
            cancelled = true
            done({ outcome: { outcome: 'cancelled' } })
          })
        }),
    )
    const prompt = agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'go' }] })
    await waitFor(() => client.permissionRequests.length === 1, 'the permission request')
    await agent.notify(methods.agent.session.cancel, { sessionId })
    expect((await prompt).stopReason).toBe('cancelled')
    await waitFor(() => cancelled, 'the client to see the request cancelled')
    const events = keel.ctx.agents.get(sessionId)!.session.events
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    expect(events.find((event) => event.type === 'tool/result')).toMatchObject({
      data: { callId: 'call-rm', isError: true },
    })
    expect(existsSync(join(keel.cwd, 'build'))).toBe(false)
  })

  it("a subagent's ask goes to the parent's session on this connection, self-contained", async () => {
    const { keel, client, agent, sessionId } = await start(
      [
        {
          when: 'parent work',
          toolCalls: [{ id: 'call-task', name: 'task', arguments: { description: 'Write it', prompt: 'child work' } }],
        },
        {
          when: 'child work',
          toolCalls: [{ id: 'call-child', name: 'bash', arguments: { command: 'echo child > child.txt' } }],
        },
        { when: 'child work', text: 'child done' },
        { when: 'parent work', text: 'all done' },
      ],
      [[subagentPlugin, { maxDepth: 1, maxConcurrent: 2 }]],
    )
    expect(
      (
        await agent.request(methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: 'text', text: 'parent work' }],
        })
      ).stopReason,
    ).toBe('end_turn')
    expect(client.permissionRequests).toHaveLength(1)
    expect(client.permissionRequests[0]).toMatchObject({
      sessionId,
      toolCall: {
        toolCallId: 'call-child',
        title: 'echo child > child.txt',
        kind: 'execute',
        status: 'pending',
        rawInput: { command: 'echo child > child.txt' },
        content: [{ type: 'content', content: { type: 'text', text: 'echo child > child.txt' } }],
      },
    })
    expect(readFileSync(join(keel.cwd, 'child.txt'), 'utf8')).toBe('child\n')
  })

  it('a client that cannot answer (an error, or an option it made up) is a denial', async () => {
    const { keel, client, agent, sessionId } = await start([
      { toolCalls: [{ id: 'call-a', name: 'bash', arguments: { command: 'echo a > a.txt' } }] },
      { toolCalls: [{ id: 'call-b', name: 'bash', arguments: { command: 'echo b > b.txt' } }] },
      { text: 'Done.' },
    ])
    let n = 0
    client.respond(() => {
      if (n++ === 0) throw new Error('no UI for that')
      return choose('allow_forever')
    })
    expect(
      (await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'go' }] }))
        .stopReason,
    ).toBe('end_turn')
    expect(
      decisions(keel.ctx.agents.get(sessionId)!.session.events).map((d) => `${d.callId} ${d.decision} ${d.scope}`),
    ).toEqual(['call-a deny once', 'call-b deny once'])
    expect(existsSync(join(keel.cwd, 'a.txt')) || existsSync(join(keel.cwd, 'b.txt'))).toBe(false)
  })
})
