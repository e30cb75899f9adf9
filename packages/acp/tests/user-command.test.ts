// A prompt that is `!command` runs the person's command as every door does (@keel/door/user-command): the client
// sees a finished execute call, live and on session/load, the model reads it next turn, a deny rule refuses it in one
// agent message, and session/cancel kills it.
import { writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { methods, type SessionUpdate } from '@agentclientprotocol/sdk'
import * as permissionsPlugin from '@keel/permissions'
import { textOf } from '@keel/session'
import { makeKeel, waitFor, type Keel, type KeelOptions } from '../../../test-support/harness.ts'
import { chunkText, connectInProcess, initialize, processesWith } from './support.ts'

let keel: Keel | undefined
let client: ReturnType<typeof connectInProcess> | undefined
afterEach(async () => {
  await client?.close()
  client = undefined
  await keel?.dispose()
  keel = undefined
})

async function start(options: KeelOptions = {}) {
  keel = await makeKeel(options)
  client = connectInProcess(keel)
  await initialize(client)
  const agent = client.connection.agent
  const { sessionId } = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
  const prompt = (text: string) =>
    agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] })
  return { keel, client, agent, sessionId, prompt }
}

const calls = (updates: SessionUpdate[]) =>
  updates.flatMap((u) =>
    u.sessionUpdate === 'tool_call'
      ? [
          {
            title: u.title,
            kind: u.kind,
            status: u.status,
            output: u.content?.map((c) => (c.type === 'content' && c.content.type === 'text' ? c.content.text : '')),
          },
        ]
      : [],
  )

describe('!command over ACP', () => {
  it('runs, shows a finished execute call live and on load, and the next request carries it', async () => {
    const { keel, sessionId, prompt } = await start({ steps: [{ text: 'I saw it' }] })
    expect(await prompt('!echo marker-$((6*7))')).toEqual({ stopReason: 'end_turn' })
    const live = calls(client!.updates(sessionId))
    expect(live).toEqual([
      {
        title: 'echo marker-$((6*7))',
        kind: 'execute',
        status: 'completed',
        output: [expect.stringMatching(/^marker-42\n/)],
      },
    ])
    await prompt('what did I run?')
    const request = keel.model.requests[0]!
    expect(request.messages.some((m) => m.role === 'user' && textOf(m.content).includes('marker-42'))).toBe(true)

    // Another connection loading the session (this one closed it) replays the same card.
    await client!.close()
    const second = connectInProcess(keel)
    client = second
    await initialize(second)
    await second.connection.agent.request(methods.agent.session.load, { sessionId, cwd: keel.cwd, mcpServers: [] })
    expect(calls(second.updates(sessionId))).toEqual(live)
  })

  it('a deny rule refuses it in one agent message, nothing recorded; a bare ! says how to use it', async () => {
    const { keel, client, sessionId, prompt } = await start({
      plugins: [
        [permissionsPlugin, { mode: 'yolo', allow: [], deny: ['bash(rm:*)'], sandbox: { allowedDomains: [] } }],
      ],
    })
    writeFileSync(join(keel.cwd, 'keep.txt'), 'x')
    expect(await prompt('!rm keep.txt')).toEqual({ stopReason: 'end_turn' })
    expect(existsSync(join(keel.cwd, 'keep.txt'))).toBe(true)
    expect(chunkText(client.updates(sessionId), 'agent_message_chunk')).toMatch(
      /^! rm keep\.txt was not run: denied by the rule bash\(rm:\*\)/,
    )
    expect(keel.ctx.sessions.get(sessionId)!.events.some((e) => e.type === 'user/message')).toBe(false)
    client.clear()
    await prompt('!')
    expect(chunkText(client.updates(sessionId), 'agent_message_chunk')).toMatch(/^Usage: !<command>/)
  })

  it('session/cancel kills it; the prompt ends cancelled and the run is recorded as cancelled', async () => {
    const { keel, agent, sessionId, prompt } = await start()
    const running = prompt('!sleep 30.7731; echo never')
    await waitFor(() => processesWith('30.7731').length > 0, 'the command to start')
    await agent.notify(methods.agent.session.cancel, { sessionId })
    expect((await running).stopReason).toBe('cancelled')
    await waitFor(() => processesWith('30.7731').length === 0, 'the command to be killed', 2000)
    const recorded = keel.ctx.sessions.get(sessionId)!.events.filter((e) => e.type === 'user/message')
    expect(recorded.map((e) => (e.type === 'user/message' ? textOf(e.data.message.content) : ''))).toEqual([
      expect.stringContaining('[cancelled by the user]'),
    ])
  })
})
