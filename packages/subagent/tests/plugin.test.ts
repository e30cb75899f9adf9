import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import type { Context } from 'cordis'
import { boot, KeelLoader } from '@keel/cli'
import { ScriptedAdapter, type ScriptStep } from '@keel/llm'
import { readSessionFile, type Session, type SessionEvent } from '@keel/session'
import * as subagent from '@keel/subagent'
import { applySubagentPlans, describeTask, resultOf, Slots, subagentPlansProjection } from '@keel/subagent'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { useBoot } from '../../../test-support/boot.ts'

/** A whole config: the defaults plus what a test sets. */
const config = (partial: Partial<subagent.Config> = {}): subagent.Config => ({
  maxDepth: 1,
  maxConcurrent: 4,
  ...partial,
})

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const plan = [{ content: 'read', status: 'completed' as const }]
let seq = 0
function ev<K extends SessionEvent['type']>(type: K, data: Extract<SessionEvent, { type: K }>['data']): SessionEvent {
  return { type, seq: seq++, time: 0, data } as unknown as SessionEvent
}

describe('plugin shape', () => {
  test("named exports only: the Loader's unwrapExports keeps the namespace", () => {
    expect('default' in subagent).toBe(false)
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(subagent)).toBe(subagent)
    expect(subagent.name).toBe('keel-subagent')
    expect(subagent.inject).toEqual(['tools', 'agents', 'sessions', 'projections', 'llm'])
    expect(subagent.Config({} as subagent.Config)).toEqual({ maxDepth: 1, maxConcurrent: 4 })
  })

  test('the model is sent name, description and the JSON Schema of task', async () => {
    keel = await makeKeel({ plugins: [[subagent, {}]] })
    const schema = keel.ctx.tools.schemas().find((tool) => tool.name === 'task')!
    expect(Object.keys(schema).sort()).toEqual(['description', 'name', 'parameters'])
    expect(schema.description).toBe(describeTask({ maxConcurrent: 4, maxDepth: 1 }))
    expect(schema.description.length).toBeLessThan(700)
    expect(JSON.parse(JSON.stringify(schema.parameters))).toEqual({
      type: 'object',
      required: ['description', 'prompt'],
      additionalProperties: false,
      properties: {
        description: { type: 'string', description: 'A short label for the task (3 to 5 words), shown to the user.' },
        prompt: { type: 'string', description: 'The complete, self-contained instructions for the subagent.' },
      },
    })
    expect(keel.ctx.tools.isConcurrencySafe('task')).toBe(true)
    expect(keel.ctx.tools.present('task', '{"description":"Survey A","prompt":"x"}').title).toBe('Survey A')
  })

  test('bad calls are isError results: no agent, blank fields, extra keys', async () => {
    keel = await makeKeel({ plugins: [[subagent, {}]] })
    const run = async (args: unknown, withAgent = true) => {
      const agent = withAgent ? keel!.agent({ persist: false }) : undefined
      const result = await keel!.ctx.tools.execute({
        callId: 'c1',
        name: 'task',
        arguments: JSON.stringify(args),
        agent,
        signal: new AbortController().signal,
      })
      return { isError: result.isError, text: textOfContent(result.content) }
    }
    expect(await run({ description: 'x', prompt: 'y' }, false)).toEqual({
      isError: true,
      text: "Error: task must be called by an agent: the subagent is linked to the calling agent's session",
    })
    expect(await run({ description: '  ', prompt: 'y' })).toEqual({
      isError: true,
      text: 'Error: description is empty; give the task a short label',
    })
    expect(await run({ description: 'x', prompt: '\n' })).toEqual({
      isError: true,
      text: 'Error: prompt is empty; write the complete instructions for the subagent',
    })
    expect((await run({ description: 'x', prompt: 'y', model: 'z' })).text).toMatch(/^Error: invalid arguments/)
    expect(keel.ctx.sessions.list()).toEqual([])
  })
})

describe("subagentPlans projection (pure fold over the parent's log)", () => {
  test('start → running, end → status and final plan; ignored events keep the reference; the next turn clears it', () => {
    const init = subagentPlansProjection.init()
    expect(subagentPlansProjection.init()).toBe(init)
    let state = applySubagentPlans(init, ev('turn/start', { turn: 1, trigger: 'prompt' }))
    expect(state).toBe(init)
    state = applySubagentPlans(state, ev('subagent/start', { callId: 'a', sessionId: 's-a', description: 'A' }))
    state = applySubagentPlans(state, ev('subagent/start', { callId: 'b', sessionId: 's-b', description: 'B' }))
    expect(applySubagentPlans(state, ev('step/end', { turn: 1, step: 1 }))).toBe(state)
    const before = state
    state = applySubagentPlans(
      state,
      ev('subagent/end', { callId: 'a', sessionId: 's-a', reason: 'completed', todos: plan }),
    )
    expect(before.a!.status).toBe('running')
    expect(state).toEqual({
      a: { sessionId: 's-a', description: 'A', status: 'completed', todos: plan },
      b: { sessionId: 's-b', description: 'B', status: 'running', todos: null },
    })
    expect(Object.isFrozen(state)).toBe(true)
    // A crash-repaired turn end settles a child that never reported.
    const repaired = applySubagentPlans(state, ev('turn/end', { turn: 1, reason: 'interrupted' }))
    expect(repaired.b!.status).toBe('error')
    expect(applySubagentPlans(state, ev('turn/end', { turn: 1, reason: 'aborted' })).b!.status).toBe('aborted')
    expect(applySubagentPlans(repaired, ev('turn/end', { turn: 1, reason: 'completed' }))).toBe(repaired)
    expect(applySubagentPlans(repaired, ev('turn/start', { turn: 2, trigger: 'prompt' }))).toBe(init)
  })

  test('result texts and footer', () => {
    const base = { turn: 1, steps: 1, toolCalls: 0 }
    expect(resultOf('s1', { ...base, reason: 'completed', text: ' done ' })).toEqual({
      isError: false,
      text: 'done\n\n[subagent s1 · 1 step · 0 tool calls]',
    })
    expect(resultOf('s1', { ...base, reason: 'completed', text: '' }).text).toBe(
      '(The subagent finished without a final answer.)\n\n[subagent s1 · 1 step · 0 tool calls]',
    )
    expect(resultOf('s1', { ...base, steps: 2, toolCalls: 1, reason: 'aborted', text: 'x' })).toEqual({
      isError: true,
      text: 'Error: the subagent was cancelled before it finished.\n[subagent s1 · 2 steps · 1 tool call]',
    })
    expect(resultOf('s1', { ...base, reason: 'step-limit', text: 'half' })).toEqual({
      isError: true,
      text: 'Error: the subagent stopped at its step limit before finishing.\nIts last text:\nhalf\n[subagent s1 · 1 step · 0 tool calls]',
    })
    expect(resultOf('s1', { ...base, reason: 'max-tokens', text: 'cut' }).isError).toBe(false)
  })
})

describe('Slots', () => {
  test('queues beyond the size, hands slots over in order, and drops a waiter whose signal aborts', async () => {
    const slots = new Slots(1)
    const first = await slots.acquire(new AbortController().signal)
    const order: string[] = []
    const cancelled = new AbortController()
    const b = slots.acquire(cancelled.signal).then(
      (release) => {
        order.push('b')
        release()
      },
      () => order.push('b-cancelled'),
    )
    const c = slots.acquire(new AbortController().signal).then((release) => {
      order.push('c')
      return release
    })
    expect(slots.queued).toBe(2)
    cancelled.abort()
    await b
    expect(slots.queued).toBe(1)
    first()
    first()
    const releaseC = await c
    expect(order).toEqual(['b-cancelled', 'c'])
    expect(slots.running).toBe(1)
    releaseC()
    expect(slots.running).toBe(0)
  })
})

const fanOut: ScriptStep[] = [
  {
    when: 'PARENT',
    toolCalls: [
      { name: 'task', arguments: { description: 'One', prompt: 'CHILD-1: plan and answer' } },
      { name: 'task', arguments: { description: 'Two', prompt: 'CHILD-2: plan and answer' } },
    ],
  },
  {
    when: 'CHILD-1',
    toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'one', status: 'completed' }] } }],
  },
  { when: 'CHILD-1', text: 'answer one' },
  {
    when: 'CHILD-2',
    toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'two', status: 'completed' }] } }],
  },
  { when: 'CHILD-2', text: 'answer two' },
  { when: 'PARENT', text: 'all done' },
]

describe('HMR safety', () => {
  test('disposing the plugin removes task, the projection and ctx.subagents; reloading brings them back', async () => {
    keel = await makeKeel()
    const ctx = keel.ctx
    const fork = ctx.plugin(subagent, config())
    await waitFor(() => ctx.tools.get('task'), 'task registered')
    expect(ctx.projections.has('subagentPlans')).toBe(true)
    expect(ctx.get('subagents')).toBeDefined()
    await fork.dispose()
    expect(ctx.tools.get('task')).toBeUndefined()
    expect(ctx.projections.has('subagentPlans')).toBe(false)
    expect(ctx.get('subagents')).toBeUndefined()
    ctx.plugin(subagent, config({ maxConcurrent: 2 }))
    await waitFor(() => ctx.tools.get('task'), 'task registered again')
    expect(ctx.tools.get('task')!.description).toBe(describeTask({ maxConcurrent: 2, maxDepth: 1 }))
    expect(ctx.projections.has('subagentPlans')).toBe(true)
  })

  test('disposing the plugin while a child runs cancels and closes it; the parent carries on without task', async () => {
    keel = await makeKeel({
      steps: [
        { when: 'PARENT', toolCalls: [{ name: 'task', arguments: { description: 'Hang', prompt: 'CHILD-H: hang' } }] },
        { when: 'CHILD-H', text: 'thinking', hang: true },
        { when: 'PARENT', text: 'carried on' },
      ],
    })
    const ctx = keel.ctx
    const fork = ctx.plugin(subagent, config())
    await waitFor(() => ctx.tools.get('task'), 'task registered')
    const parent = keel.agent()
    const turn = parent.prompt('PARENT: delegate')
    await waitFor(() => ctx.get('subagents')?.running === 1 && keel!.model.requests.length === 2, 'child running')
    const childId = (parent.session.events.find((e) => e.type === 'subagent/start') as SessionEvent<'subagent/start'>)
      .data.sessionId
    await fork.dispose()
    const result = await turn
    expect(result).toMatchObject({ reason: 'completed', text: 'carried on' })
    const taskResult = parent.session.events.find((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>
    expect(taskResult.data.isError).toBe(true)
    expect(textOfContent(taskResult.data.content)).toMatch(/^Error: the subagent was cancelled/)
    expect(ctx.sessions.get(childId)).toBeUndefined()
    const child = readSessionFile(ctx.sessions.pathOf(childId)!)
    expect(child.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    expect(keel.model.requests.at(-1)!.tools.map((tool) => tool.name)).not.toContain('task')
  })
})

describe('resume', () => {
  test("resuming a parent does not reopen its finished children; the parent's log alone gives their final plans", async () => {
    keel = await makeKeel({ steps: fanOut, plugins: [[subagent, {}]] })
    const ctx = keel.ctx
    const parent = keel.agent()
    await parent.prompt('PARENT: fan out')
    const children = ctx.sessions.list().filter((s) => s.parent?.sessionId === parent.id)
    expect(children.map((s) => s.title).sort()).toEqual(['CHILD-1: plan and answer', 'CHILD-2: plan and answer'])
    const bytes = children.map((s) => readFileSync(s.path, 'utf8'))
    ctx.agents.close(parent)

    const opened: string[] = []
    ctx.on('session/created', (session: Session) => opened.push(session.id))
    const { agent } = ctx.agents.resume(parent.id, { model: keel.model })
    expect(opened).toEqual([parent.id])
    for (const child of children) {
      expect(ctx.sessions.get(child.id)).toBeUndefined()
      expect(ctx.agents.get(child.id)).toBeUndefined()
    }
    expect(Object.values(ctx.subagents.plans(agent.session))).toEqual([
      {
        sessionId: children.find((s) => s.title.startsWith('CHILD-1'))!.id,
        description: 'One',
        status: 'completed',
        todos: [{ content: 'one', status: 'completed' }],
      },
      {
        sessionId: children.find((s) => s.title.startsWith('CHILD-2'))!.id,
        description: 'Two',
        status: 'completed',
        todos: [{ content: 'two', status: 'completed' }],
      },
    ])
    expect(children.map((s) => readFileSync(s.path, 'utf8'))).toEqual(bytes)
    // The latest top-level session is the parent, never a child.
    expect(ctx.sessions.list(keel.cwd).find((s) => !s.parent)?.id).toBe(parent.id)
  })
})

describe('through the real cordis Loader (boot)', () => {
  const booted = useBoot('keel-subagent-loader-')
  let ctx: Context | undefined

  function composition(subagentConfig: string): string {
    const path = join(booted.dir(), 'keel.yml')
    writeFileSync(
      path,
      [
        "- id: session\n  name: '@keel/session'",
        "- id: llm\n  name: '@keel/llm'",
        "- id: tools\n  name: '@keel/tools'",
        "- id: agent\n  name: '@keel/agent'",
        "- id: shell\n  name: '@keel/shell'",
        "- id: todo\n  name: '@keel/todo'\n  config:\n    allowParallelInProgress: true",
        `- id: subagent\n  name: '@keel/subagent'\n${subagentConfig}`,
      ].join('\n') + '\n',
    )
    return path
  }

  test('loads from a composition file with its config and runs a fan-out with dev invariants on', async () => {
    const path = composition('  config:\n    maxDepth: 2\n    maxConcurrent: 3\n')
    const before = readFileSync(path, 'utf8')
    ctx = await booted.boot({ composition: path, dev: true })
    await waitFor(() => ctx!.tools.get('task'), 'task registered')
    expect(ctx.tools.get('task')!.description).toBe(describeTask({ maxConcurrent: 3, maxDepth: 2 }))
    expect(ctx.projections.has('subagentPlans')).toBe(true)
    const model = new ScriptedAdapter({ steps: fanOut })
    const parent = ctx.agents.create({ cwd: booted.dir(), model })
    const result = await parent.prompt('PARENT: fan out')
    expect(result).toMatchObject({ reason: 'completed', text: 'all done' })
    const answers = parent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => textOfContent((e as SessionEvent<'tool/result'>).data.content).split('\n')[0])
    expect(answers).toEqual(['answer one', 'answer two'])
    expect(Object.values(ctx.subagents.plans(parent.session)).map((p) => p.status)).toEqual(['completed', 'completed'])
    expect(readFileSync(path, 'utf8')).toBe(before)
  })

  test('a bad config value is a clear load error naming the key', async () => {
    const path = composition('  config:\n    maxConcurrent: 0\n')
    await expect(boot({ composition: path })).rejects.toThrow(/maxConcurrent/)
  })
})
