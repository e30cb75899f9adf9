// Plan mode through the real agent loop: the policy refuses writes, propose_plan logs a proposal, and the person's
// answer (approve, reject, edit) and edits reach the model as the log says. Scripted model, dev invariants on.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as fsPlugin from '@keel/fs'
import * as permissionsPlugin from '@keel/permissions'
import type { Message } from '@keel/session'
import { PLAN_MODE_ON, PROPOSED, standingPlan } from '@keel/todo'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const propose = (todos: unknown, plan = '# Plan\nAdd a.txt') => ({
  toolCalls: [{ name: 'propose_plan', arguments: { plan, todos }, id: 'p1' }],
})
const write = (id: string, path: string) => ({
  toolCalls: [{ name: 'write', arguments: { path, content: 'x\n' }, id }],
})
const CHECKLIST = [
  { content: 'Write a.txt', status: 'pending' },
  { content: 'Check it', status: 'pending' },
]

async function planKeel(steps: unknown[], mode: 'plan' | 'ask' = 'plan') {
  keel = await makeKeel({
    steps: steps as never,
    shell: false,
    plugins: [
      [fsPlugin, {}],
      [permissionsPlugin, { mode, allow: [], deny: [], sandbox: { allowedDomains: [] } }],
    ],
  })
  return keel
}

function texts(message: Message): string {
  return textOfContent(message.content as { type: string; text?: string }[])
}
const userTexts = (messages: readonly Message[]) => messages.filter((m) => m.role === 'user').map(texts)
function toolResult(messages: readonly Message[], id: string): { isError: boolean; text: string } {
  for (const message of messages)
    for (const block of message.content)
      if (block.type === 'tool-result' && block.toolCallId === id)
        return { isError: block.isError === true, text: textOfContent(block.content as never) }
  throw new Error(`no result for ${id}`)
}

describe('plan mode', () => {
  test('a write is refused by the policy, the model is told once it is planning, and a proposal is logged', async () => {
    const k = await planKeel([write('w1', 'a.txt'), propose(CHECKLIST), { text: 'Proposed.' }])
    const agent = k.agent()
    await agent.prompt('add a.txt')
    expect(existsSync(join(k.cwd, 'a.txt'))).toBe(false)
    const [first, second] = k.model.requests
    // The line follows the prompt; system prompt and tools are those of every other mode.
    expect(userTexts(first!.messages)).toEqual(['add a.txt', PLAN_MODE_ON])
    expect(first!.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['write', 'edit', 'propose_plan']))
    const refused = toolResult(second!.messages, 'w1')
    expect(refused.isError).toBe(true)
    expect(refused.text).toContain('denied by plan mode: nothing may be written until the person approves a plan')
    // Told once: the third request carries no second copy.
    expect(userTexts(k.model.requests[2]!.messages).filter((t) => t === PLAN_MODE_ON)).toHaveLength(1)
    expect(toolResult(k.model.requests[2]!.messages, 'p1')).toEqual({ isError: false, text: PROPOSED })
    const proposal = agent.session.events.find((e) => e.type === 'plan/proposal')!
    expect(proposal.data).toEqual({ callId: 'p1', plan: '# Plan\nAdd a.txt', todos: CHECKLIST })
    expect(k.ctx.plans.proposal(agent.session)?.status).toBe('pending')
  })

  test('approval switches the mode, makes the checklist the standing plan and opens a turn that writes', async () => {
    const k = await planKeel([
      propose(CHECKLIST),
      { text: 'Proposed.' },
      write('w2', 'a.txt'),
      {
        toolCalls: [
          {
            name: 'todo_write',
            arguments: {
              todos: [
                { content: 'Write a.txt', status: 'completed' },
                { content: 'Check it', status: 'in_progress' },
              ],
            },
          },
        ],
      },
      { text: 'Done.' },
    ])
    const agent = k.agent()
    await agent.prompt('add a.txt')
    const answered = await k.ctx.plans.answer(agent, { kind: 'approve', mode: 'auto' })
    if ('error' in answered) throw new Error(answered.error)
    const turn = await answered.turn!
    expect(turn.reason).toBe('completed')
    expect(readFileSync(join(k.cwd, 'a.txt'), 'utf8')).toBe('x\n')
    expect(k.ctx.permissions.mode).toBe('auto')
    const types = agent.session.events.map((e) => e.type)
    // Between the turns: the approval, the person's plan and the mode change; the new turn carries the plan in.
    const approve = types.indexOf('plan/approve')
    expect(types.slice(approve, approve + 4)).toEqual(['plan/approve', 'todo/write', 'permission/mode', 'turn/start'])
    const approvalRequest = k.model.requests[2]!
    expect(approvalRequest.tools.map((t) => t.name)).toContain('write')
    const prompt = userTexts(approvalRequest.messages).at(-1)!
    expect(prompt).toContain('The person approved your plan, to run in auto mode')
    expect(prompt).toContain('1. Write a.txt\n2. Check it')
    // The standing plan at the approved turn's first request is the approved checklist (carried past turn/start).
    const atRequest = agent.session.events.slice(
      0,
      agent.session.events.findIndex((e, i) => i > approve && e.type === 'assistant/message'),
    )
    expect(standingPlan(atRequest)).toEqual(CHECKLIST)
    // The model's own update after that needs no change note: nothing the person did came between.
    expect(userTexts(k.model.requests[4]!.messages).some((t) => t.startsWith('The person changed the plan'))).toBe(
      false,
    )
  })

  test('a rejection opens a turn whose request carries the sentence; the model keeps planning', async () => {
    const k = await planKeel([propose(CHECKLIST), { text: 'Proposed.' }, write('w3', 'a.txt'), { text: 'ok' }])
    const agent = k.agent()
    await agent.prompt('add a.txt')
    const answered = await k.ctx.plans.answer(agent, { kind: 'reject', message: 'use b.txt instead' })
    if ('error' in answered) throw new Error(answered.error)
    await answered.turn
    const request = k.model.requests[2]!
    expect(userTexts(request.messages).at(-1)).toContain('The person rejected your plan and said: "use b.txt instead"')
    expect(k.ctx.permissions.mode).toBe('plan')
    expect(toolResult(k.model.requests[3]!.messages, 'w3').text).toContain('denied by plan mode')
    expect(existsSync(join(k.cwd, 'a.txt'))).toBe(false)
    expect(agent.session.events.find((e) => e.type === 'plan/reject')!.data).toEqual({
      callId: 'p1',
      message: 'use b.txt instead',
    })
    // Answering again: nothing is pending.
    expect(await k.ctx.plans.answer(agent, { kind: 'approve', mode: 'ask' })).toEqual({
      error: 'no plan is waiting for an answer',
    })
  })

  test('an approval with an edited checklist runs the edit; an edit breaking the rules is refused whole', async () => {
    const k = await planKeel([propose(CHECKLIST), { text: 'Proposed.' }, { text: 'Running.' }])
    const agent = k.agent()
    await agent.prompt('add a.txt')
    const before = agent.session.seq
    expect(
      await k.ctx.plans.answer(agent, {
        kind: 'edit',
        todos: [
          { content: 'a', status: 'in_progress' },
          { content: 'b', status: 'in_progress' },
        ],
      }),
    ).toEqual({ error: expect.stringMatching(/^the plan was not changed: 2 tasks are in_progress/) })
    expect(agent.session.seq).toBe(before)
    const edited = [{ content: 'Write b.txt', status: 'pending' as const }]
    expect(await k.ctx.plans.answer(agent, { kind: 'edit', plan: 'Use b.txt', todos: edited })).toEqual({})
    const answered = await k.ctx.plans.answer(agent, { kind: 'approve', mode: 'ask' })
    if ('error' in answered) throw new Error(answered.error)
    await answered.turn
    const prompt = userTexts(k.model.requests[2]!.messages).at(-1)!
    expect(prompt).toContain('approved your plan, with their edits, to run in ask mode')
    expect(prompt).toContain('Use b.txt')
    expect(k.ctx.plans.proposal(agent.session)).toMatchObject({ status: 'approved', edited: true, todos: edited })
  })

  test('propose_plan outside plan mode, with no todos, or with invalid todos is an error the model reads', async () => {
    const bad = [
      [[], 'todos is empty'],
      [[{ content: ' ', status: 'pending' }], 'todos[0].content is empty'],
      [
        [
          { content: 'a', status: 'in_progress' },
          { content: 'a', status: 'pending' },
        ],
        'todos[1] repeats todos[0]',
      ],
      [[{ content: 'a', status: 'started' }], 'invalid arguments'],
    ] as const
    const k = await planKeel(
      [propose(CHECKLIST), { text: 'ok' }, ...bad.flatMap(([todos]) => [propose(todos), { text: 'ok' }])],
      'ask',
    )
    const agent = k.agent()
    await agent.prompt('go')
    expect(toolResult(k.model.requests[1]!.messages, 'p1')).toEqual({
      isError: true,
      text: expect.stringContaining('propose_plan is only for plan mode, and the mode is ask'),
    })
    k.ctx.permissions.setMode('plan', [agent.session])
    for (const [, error] of bad) {
      const count = k.model.requests.length
      await agent.prompt('again')
      // A repeated id is made unique by the loop (p1_2, …): the call of this turn is the last one.
      const messages = k.model.requests[count + 1]!.messages
      const call = messages
        .flatMap((m) => m.content)
        .filter((b) => b.type === 'tool-call')
        .at(-1)!
      const result = toolResult(messages, (call as { id: string }).id)
      expect(result.isError).toBe(true)
      expect(result.text).toContain(error)
    }
    expect(agent.session.events.some((e) => e.type === 'plan/proposal')).toBe(false)
  })
})

describe("the person's edits", () => {
  test('an edit between turns is carried into the next turn and the model reads the change note once', async () => {
    const k = await planKeel(
      [
        { toolCalls: [{ name: 'todo_write', arguments: { todos: CHECKLIST } }] },
        { text: 'planned' },
        { text: 'seen' },
        { text: 'again' },
      ],
      'ask',
    )
    const agent = k.agent()
    await agent.prompt('plan it')
    expect(k.ctx.plans.edit(agent.session, { op: 'add', content: 'Write docs', index: 0 })).toBeUndefined()
    expect(k.ctx.plans.edit(agent.session, { op: 'move', index: 2, to: 1 })).toBeUndefined()
    expect(k.ctx.plans.edit(agent.session, { op: 'delete', index: 2 })).toBeUndefined()
    expect(k.ctx.plans.edit(agent.session, { op: 'add', content: 'Write docs' })).toEqual({
      error: 'the plan was not changed: todos[2] repeats todos[0] ("Write docs"); each task must be unique',
    })
    await agent.prompt('go on')
    const note = userTexts(k.model.requests[2]!.messages).at(-1)!
    expect(note).toBe(
      'The person changed the plan: added "Write docs", removed "Write a.txt". Keep their items; the plan now:\n1. [pending] Write docs\n2. [pending] Check it',
    )
    expect(standingPlan(agent.session.events)).toEqual([
      { content: 'Write docs', status: 'pending' },
      { content: 'Check it', status: 'pending' },
    ])
    await agent.prompt('and again')
    expect(userTexts(k.model.requests[3]!.messages).filter((t) => t.startsWith('The person changed'))).toHaveLength(1)
  })

  test('two doors editing at once: both edits land in order and the last wins', async () => {
    const k = await planKeel(
      [{ toolCalls: [{ name: 'todo_write', arguments: { todos: CHECKLIST } }] }, { text: 'ok' }],
      'ask',
    )
    const agent = k.agent()
    await agent.prompt('plan it')
    const results = await Promise.all([
      Promise.resolve().then(() => k.ctx.plans.edit(agent.session, { op: 'status', index: 0, status: 'in_progress' })),
      Promise.resolve().then(() => k.ctx.plans.edit(agent.session, { op: 'rename', index: 1, content: 'Check twice' })),
    ])
    expect(results).toEqual([undefined, undefined])
    const writes = agent.session.events.filter((e) => e.type === 'todo/write' && e.data.source === 'user')
    expect(writes.map((e) => (e.data as { todos: unknown }).todos)).toEqual([
      [
        { content: 'Write a.txt', status: 'in_progress' },
        { content: 'Check it', status: 'pending' },
      ],
      [
        { content: 'Write a.txt', status: 'in_progress' },
        { content: 'Check twice', status: 'pending' },
      ],
    ])
  })
})
