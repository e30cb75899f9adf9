import { afterEach, describe, expect, test } from 'vitest'
import { Context } from 'cordis'
import * as sessionPlugin from '@keel/session'
import * as devPlugin from '@keel/session/dev'
import * as toolsPlugin from '@keel/tools'
import * as todo from '@keel/todo'
import { describeTodoWrite, planSummary } from '@keel/todo'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function setup(allowParallelInProgress = false) {
  keel = await makeKeel({ todo: { allowParallelInProgress } })
  const agent = keel.agent({ persist: false })
  const s = agent.session
  s.append('turn/start', { turn: 1, trigger: 'prompt' })
  s.append('step/start', { turn: 1, step: 1 })
  let n = 0
  const call = async (args: unknown, withAgent = true) => {
    const callId = `c${++n}`
    s.append('tool/call', {
      turn: 1,
      step: 1,
      callId,
      name: 'todo_write',
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
    })
    const result = await keel!.ctx.tools.execute({
      callId,
      name: 'todo_write',
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
      agent: withAgent ? agent : undefined,
      signal: new AbortController().signal,
    })
    s.append(
      'tool/result',
      { turn: 1, step: 1, callId, content: result.content, isError: result.isError },
      { surfaceOp: { op: 'append' } },
    )
    return { ...result, text: textOfContent(result.content) }
  }
  const writes = () => s.events.filter((e) => e.type === 'todo/write')
  return { agent, s, call, writes }
}

describe('todo_write schema', () => {
  test('the model is sent exactly name, description and the JSON Schema', async () => {
    keel = await makeKeel()
    const schema = keel.ctx.tools.schemas().find((t) => t.name === 'todo_write')!
    expect(Object.keys(schema).sort()).toEqual(['description', 'name', 'parameters'])
    expect(JSON.parse(JSON.stringify(schema.parameters))).toEqual({
      type: 'object',
      required: ['todos'],
      additionalProperties: false,
      properties: {
        todos: {
          type: 'array',
          description: 'The complete list, in order.',
          items: {
            type: 'object',
            required: ['content', 'status'],
            additionalProperties: false,
            properties: {
              content: { type: 'string', description: 'What the task is, in a few words.' },
              status: { enum: ['pending', 'in_progress', 'completed'] },
            },
          },
        },
      },
    })
  })

  test('the description is at most 120 words and its active clause follows the policy', () => {
    const single = describeTodoWrite({ allowParallelInProgress: false })
    const parallel = describeTodoWrite({ allowParallelInProgress: true })
    for (const text of [single, parallel]) expect(text.split(/\s+/).length).toBeLessThanOrEqual(120)
    expect(single).toMatch(/exactly one task in_progress/)
    expect(parallel).not.toMatch(/exactly one/)
    expect(parallel).toMatch(/several may be in_progress/)
    expect(single.replace(/Keep exactly one[^.]*\./, '')).toBe(
      parallel.replace(/Mark a task in_progress when[^.]*\)\./, ''),
    )
  })
})

describe('todo_write arguments (through the real ctx.tools.execute)', () => {
  test.each([
    [{ todos: [{ content: 'a', status: 'doing' }] }, 'todos[0].status: must be one of pending|in_progress|completed'],
    [{ todos: 'nope' }, 'todos: must be an array'],
    [
      { todos: [{ content: 'a', status: 'pending', priority: 'high' }] },
      'todos[0].priority: is not an allowed property',
    ],
    [{ todos: [{ status: 'pending' }] }, 'todos[0].content: is required'],
    [{}, 'todos: is required'],
    ['{"todos": [', 'arguments are not valid JSON'],
  ])('%j is an isError result naming the problem, and nothing is appended', async (args, problem) => {
    const { call, writes } = await setup()
    const result = await call(args)
    expect(result.isError).toBe(true)
    expect(result.text).toContain(problem)
    expect(result.text.startsWith('Error: ')).toBe(true)
    expect(writes()).toHaveLength(0)
  })
})

describe("todo_write: another agent's shape is fixed in one retry", () => {
  const help = 'Expected exactly {"todos":[{"content":"…","status":"pending|in_progress|completed"}]}'
  test('ten Claude-style items: every item is counted, and the accepted shape is shown once', async () => {
    const { call, writes } = await setup()
    const todos = Array.from({ length: 10 }, (_, i) => ({ content: `step ${i}`, status: 'pending', activeForm: 'x' }))
    const result = await call({ todos })
    expect(result.isError).toBe(true)
    expect(result.text).toBe(
      `Error: invalid arguments:\ntodos[0..9].activeForm: is not an allowed property (10 items)\n${help}: the whole list on every call, each task with only these two keys. Drop a cancelled task; keep a blocked one pending.`,
    )
    expect(result.text.split(help)).toHaveLength(2)
    expect(writes()).toHaveLength(0)
    // What the error says is enough: drop the key everywhere, and the next call lands.
    const fixed = await call({ todos: todos.map(({ content, status }) => ({ content, status })) })
    expect(fixed.isError).toBe(false)
  })

  test.each([
    [
      'codex plan/step',
      { explanation: 'x', plan: [{ step: 'a', status: 'pending' }] },
      ['todos: is required', 'plan: is not an allowed property'],
    ],
    [
      'opencode id/priority/cancelled',
      {
        todos: [
          { id: '1', content: 'a', status: 'cancelled', priority: 'high' },
          { id: '2', content: 'b', status: 'pending', priority: 'low' },
        ],
      },
      [
        'todos[0..1].id: is not an allowed property (2 items)',
        'todos[0..1].priority: is not an allowed property (2 items)',
        'todos[0].status: must be one of pending|in_progress|completed',
      ],
    ],
    ['plain strings', { todos: ['a', 'b'] }, ['todos[0..1]: must be an object (2 items)']],
  ])('%s: every problem and the shape', async (_, args, problems) => {
    const { call } = await setup()
    const { text } = await call(args)
    for (const problem of problems) expect(text).toContain(problem)
    expect(text).toContain(help)
  })

  test('more distinct problems than fit are counted ("and N more")', async () => {
    const { call } = await setup()
    const extra = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 1]))
    const { text } = await call({ todos: [{ content: 'a', status: 'pending', ...extra }] })
    const lines = text.split('\n')
    expect(lines).toContain('… and 9 more')
    expect(lines.filter((line) => line.endsWith('is not an allowed property'))).toHaveLength(11)
  })

  test('value problems are all listed, with their count', async () => {
    const { call } = await setup()
    const { text } = await call({
      todos: [
        { content: ' ', status: 'pending' },
        { content: 'a', status: 'in_progress' },
        { content: 'a', status: 'in_progress' },
        { content: ' ', status: 'pending' },
      ],
    })
    expect(text).toBe(
      [
        'Error: 4 problems:',
        '2 tasks are in_progress ("a", "a"); keep exactly one task in_progress and the rest pending or completed',
        'todos[0,3].content is empty; every task needs a short description (2 items)',
        'todos[2] repeats todos[1] ("a"); each task must be unique',
      ].join('\n'),
    )
  })
})

describe('todo_write values', () => {
  test('content is trimmed; blank and duplicate-after-trim are rejected and append nothing', async () => {
    const { call, writes } = await setup()
    expect((await call({ todos: [{ content: '   ', status: 'pending' }] })).text).toMatch(
      /todos\[0\]\.content is empty/,
    )
    expect(
      (
        await call({
          todos: [
            { content: 'a', status: 'pending' },
            { content: ' a ', status: 'pending' },
          ],
        })
      ).text,
    ).toMatch(/todos\[1\] repeats todos\[0\]/)
    expect(writes()).toHaveLength(0)
    const ok = await call({ todos: [{ content: '  read the code  ', status: 'in_progress' }] })
    expect(ok.isError).toBe(false)
    expect(writes()[0]!.data).toEqual({ todos: [{ content: 'read the code', status: 'in_progress' }] })
  })

  test('two in progress: rejected under the default policy, accepted under the parallel one', async () => {
    const twoActive = {
      todos: [
        { content: 'a', status: 'in_progress' },
        { content: 'b', status: 'in_progress' },
      ],
    }
    const strict = await setup(false)
    const rejected = await strict.call(twoActive)
    expect(rejected.isError).toBe(true)
    expect(rejected.text).toMatch(/2 tasks are in_progress \("a", "b"\); keep exactly one/)
    expect(strict.writes()).toHaveLength(0)
    await keel!.dispose()
    keel = undefined
    const parallel = await setup(true)
    const accepted = await parallel.call(twoActive)
    expect(accepted.isError).toBe(false)
    expect(accepted.text).toBe('Todo list updated: 0 completed, 2 in progress, 0 pending.')
    expect(parallel.writes()).toHaveLength(1)
  })

  test('each write replaces the list; the result is short and fixed-shape', async () => {
    const { call, writes } = await setup()
    const first = await call({
      todos: [
        { content: 'a', status: 'in_progress' },
        { content: 'b', status: 'pending' },
        { content: 'c', status: 'pending' },
      ],
    })
    expect(first.text).toBe('Todo list updated: 0 completed, 1 in progress, 2 pending.')
    const second = await call({
      todos: [
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress' },
        { content: 'c', status: 'pending' },
      ],
    })
    expect(second.text).toBe('Todo list updated: 1 completed, 1 in progress, 1 pending.')
    expect(writes().map((w) => w.data.todos.length)).toEqual([3, 3])
  })

  test('silent-drop report: removing unfinished items names them; removing completed ones does not', async () => {
    const { call, writes } = await setup()
    await call({
      todos: [
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress' },
        { content: 'c', status: 'pending' },
      ],
    })
    const dropped = await call({ todos: [{ content: 'b', status: 'in_progress' }] })
    expect(dropped.isError).toBe(false)
    expect(dropped.text).toBe(
      'Todo list updated: 0 completed, 1 in progress, 0 pending.\nRemoved without completing: "c".',
    )
    expect(writes().at(-1)!.data).toEqual({ todos: [{ content: 'b', status: 'in_progress' }] })
    const clean = await call({ todos: [{ content: 'b', status: 'completed' }] })
    expect(clean.text).toBe('Todo list updated: 1 completed, 0 in progress, 0 pending.')
  })

  test('an empty list clears the plan', async () => {
    const { call, s } = await setup()
    await call({ todos: [{ content: 'a', status: 'pending' }] })
    const cleared = await call({ todos: [] })
    expect(cleared.text).toBe('Todo list cleared.\nRemoved without completing: "a".')
    expect(keel!.ctx.projections.get(s, 'todos')).toEqual([])
  })

  test('a call without an owning agent is rejected and appends nothing', async () => {
    const { call, writes } = await setup()
    const result = await call({ todos: [{ content: 'a', status: 'pending' }] }, false)
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/must be called by an agent/)
    expect(writes()).toHaveLength(0)
  })
})

describe('presentation', () => {
  test('presentCall is pure and fixed; planSummary counts', async () => {
    keel = await makeKeel()
    const args = {
      todos: [
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress' },
        { content: 'c', status: 'in_progress' },
      ],
    }
    expect(keel.ctx.tools.present('todo_write', JSON.stringify(args))).toEqual({
      title: 'Update plan',
      kind: 'other',
      rawInput: args,
    })
    expect(planSummary(args.todos as todo.TodoItem[])).toEqual({ done: 1, total: 3, active: 'b', moreActive: 1 })
    expect(planSummary([])).toEqual({ done: 0, total: 0, active: null, moreActive: 0 })
  })
})

describe('plugin lifecycle', () => {
  test('disposing the plugin removes the tool, the projection and the invariant; plugging it in again restores all three', async () => {
    const ctx = new Context()
    ctx.plugin(sessionPlugin)
    ctx.plugin(devPlugin)
    ctx.plugin(toolsPlugin)
    await ctx.start()
    await waitFor(() => ctx.get('tools') && ctx.get('projections') && ctx.get('invariants'))
    const fork = ctx.plugin(todo, { allowParallelInProgress: false })
    await waitFor(() => ctx.tools.get('todo_write') && ctx.projections.has('todos'))
    fork.dispose()
    expect(ctx.tools.get('todo_write')).toBeUndefined()
    expect(ctx.projections.has('todos')).toBe(false)
    // Without the invariant, a malformed snapshot is no longer vetoed.
    const s = ctx.sessions.create({ cwd: '/tmp', persist: false })
    s.append('turn/start', { turn: 1, trigger: 'prompt' })
    expect(() => s.append('todo/write', { todos: [{ content: ' x', status: 'pending' }] })).not.toThrow()
    ctx.sessions.close(s)
    ctx.plugin(todo, { allowParallelInProgress: false })
    await waitFor(() => ctx.tools.get('todo_write') && ctx.projections.has('todos'))
    expect(ctx.tools.get('todo_write')).toBeDefined()
    // The invariant is back: the same malformed snapshot is vetoed again.
    const again = ctx.sessions.create({ cwd: '/tmp', persist: false })
    again.append('turn/start', { turn: 1, trigger: 'prompt' })
    expect(() => again.append('todo/write', { todos: [{ content: ' x', status: 'pending' }] })).toThrow()
    ctx.sessions.close(again)
    await ctx.stop().catch(() => {})
  })
})
