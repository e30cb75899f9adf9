// Plan mode over ACP, spoken to by the SDK's own client: the modes advertise plan, `session/set_mode` enters it, the
// proposal arrives as the `switch_mode` permission request the ACP documents for leaving a plan mode, and the
// approved checklist reaches the client as `plan` updates.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { methods } from '@agentclientprotocol/sdk'
import * as fsPlugin from '@keel/fs'
import * as permissionsPlugin from '@keel/permissions'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { connectInProcess, initialize } from './support.ts'

let keel: Keel | undefined
const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close()
  await keel?.dispose()
  keel = undefined
})

const CHECKLIST = [
  { content: 'Write a.txt', status: 'pending' },
  { content: 'Check it', status: 'pending' },
]
const propose = {
  toolCalls: [{ id: 'p1', name: 'propose_plan', arguments: { plan: 'Write a.txt', todos: CHECKLIST } }],
}
const write = (id: string) => ({ toolCalls: [{ id, name: 'write', arguments: { path: 'a.txt', content: 'x\n' } }] })

async function start(steps: unknown[]) {
  keel = await makeKeel({
    steps: steps as never,
    plugins: [
      [fsPlugin, { allowOutsideCwd: false }],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
    ],
  })
  const client = connectInProcess(keel, true)
  open.push(client)
  await initialize(client)
  const agent = client.connection.agent
  const created = await agent.request(methods.agent.session.new, { cwd: keel.cwd, mcpServers: [] })
  expect(created.modes?.availableModes.find((m) => m.id === 'plan')?.description).toContain('proposes a plan')
  await agent.request(methods.agent.session.setMode, { sessionId: created.sessionId, modeId: 'plan' })
  return { keel, client, agent, sessionId: created.sessionId }
}

describe('plan mode over ACP', () => {
  it('set_mode plan, a refused write, the proposal as a switch_mode request, approval in auto, plan updates', async () => {
    const { keel, client, agent, sessionId } = await start([
      write('w1'),
      propose,
      { text: 'Proposed.' },
      write('w2'),
      { text: 'Done.' },
    ])
    client.respond(() => ({ outcome: { outcome: 'selected', optionId: 'approve_auto' } }))
    const response = await agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'add a.txt' }],
    })
    expect(response.stopReason).toBe('end_turn')
    // The write in plan mode never reached the client as a question: the policy refused it.
    const [request, ...more] = client.permissionRequests
    expect(more).toEqual([])
    expect(request!.toolCall).toMatchObject({ kind: 'switch_mode', status: 'pending' })
    expect(JSON.stringify(request!.toolCall.content)).toContain(
      'Write a.txt\\n\\nChecklist:\\n1. Write a.txt\\n2. Check it',
    )
    expect(request!.options.map((o) => o.optionId)).toEqual(['approve_ask', 'approve_auto', 'reject'])
    // Approved: the file is written in the same prompt, in auto mode, and the client heard the mode and the plan.
    expect(readFileSync(join(keel.cwd, 'a.txt'), 'utf8')).toBe('x\n')
    expect(
      client.updates(sessionId, 'current_mode_update').map((u) => (u as { currentModeId: string }).currentModeId),
    ).toEqual(['plan', 'auto'])
    const plans = client.updates(sessionId, 'plan') as { entries: { content: string; status: string }[] }[]
    expect(plans.at(-1)!.entries.map((e) => [e.content, e.status])).toEqual([
      ['Write a.txt', 'pending'],
      ['Check it', 'pending'],
    ])
    const events = keel.ctx.agents.get(sessionId)!.session.events
    expect(events.find((e) => e.type === 'plan/approve')?.data).toMatchObject({ callId: 'p1', mode: 'auto' })
  })

  it('a rejection in the editor keeps planning: the model is told, and nothing is written', async () => {
    const { keel, client, agent, sessionId } = await start([
      propose,
      { text: 'Proposed.' },
      { text: 'What should change?' },
    ])
    client.respond(() => ({ outcome: { outcome: 'selected', optionId: 'reject' } }))
    await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'add a.txt' }] })
    expect(client.permissionRequests).toHaveLength(1)
    expect(existsSync(join(keel.cwd, 'a.txt'))).toBe(false)
    expect(keel.ctx.permissions.mode).toBe('plan')
    const last = keel.model.requests.at(-1)!.messages.at(-1)!
    expect(JSON.stringify(last.content)).toContain('The person rejected your plan and said: \\"Rejected in the editor')
  })
})
