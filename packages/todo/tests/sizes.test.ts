import { afterEach, describe, expect, test } from 'vitest'
import { MAX_TODO_CHARS, MAX_TODOS } from '@keel/todo'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function setup() {
  keel = await makeKeel()
  const agent = keel.agent({ persist: false })
  const s = agent.session
  s.append('turn/start', { turn: 1, trigger: 'prompt' })
  s.append('step/start', { turn: 1, step: 1 })
  let n = 0
  const call = async (todos: { content: string; status: string }[]) => {
    const callId = `c${++n}`
    const args = JSON.stringify({ todos })
    s.append('tool/call', { turn: 1, step: 1, callId, name: 'todo_write', arguments: args })
    const result = await keel!.ctx.tools.execute({
      callId,
      name: 'todo_write',
      arguments: args,
      agent,
      signal: new AbortController().signal,
    })
    s.append(
      'tool/result',
      { turn: 1, step: 1, callId, content: result.content, isError: result.isError },
      { surfaceOp: { op: 'append' } },
    )
    return { ...result, text: textOfContent(result.content) }
  }
  const writes = () => s.events.filter((e) => e.type === 'todo/write').length
  return { s, call, writes }
}

const plan = (count: number, length = 10) =>
  Array.from({ length: count }, (_, i) => ({ content: `${i}`.padEnd(length, '.'), status: 'pending' as const }))

describe('todo_write sizes', () => {
  test(`${MAX_TODOS} tasks are accepted; ${MAX_TODOS + 1} are an error that says so, and nothing is appended`, async () => {
    const { call, writes } = await setup()
    expect((await call(plan(MAX_TODOS))).isError).toBe(false)
    const refused = await call(plan(10_000))
    expect(refused.isError).toBe(true)
    expect(refused.text).toBe(
      `Error: the plan has 10000 tasks; the limit is ${MAX_TODOS}. Group related steps into fewer, broader tasks`,
    )
    expect((await call(plan(MAX_TODOS + 1))).text).toMatch(/^Error: the plan has 101 tasks; the limit is 100\./)
    expect(writes()).toBe(1)
  })

  test(`a task of ${MAX_TODO_CHARS} characters (after trimming) is accepted; one longer is an error naming it`, async () => {
    const { call, writes } = await setup()
    expect((await call([{ content: `  ${'x'.repeat(MAX_TODO_CHARS)}  `, status: 'pending' }])).isError).toBe(false)
    const refused = await call([
      { content: 'short', status: 'pending' },
      { content: 'y'.repeat(MAX_TODO_CHARS + 1), status: 'pending' },
    ])
    expect(refused.isError).toBe(true)
    expect(refused.text).toBe(
      `Error: todos[1].content is 501 characters; the limit is ${MAX_TODO_CHARS}. Keep each task to a short description`,
    )
    expect(writes()).toBe(1)
  })

  test('the drop report quotes the first five tasks, each clipped, and counts the rest', async () => {
    const { call } = await setup()
    await call(plan(MAX_TODOS, MAX_TODO_CHARS))
    const cleared = await call([])
    expect(cleared.isError).toBe(false)
    const [, report] = cleared.text.split('\n')
    expect(report).toMatch(/^Removed without completing: ("\d\.+…", ){4}"\d\.+…" and 95 more\.$/)
    expect(report!.length).toBeLessThan(600)
  })

  test('an oversized plan already on the log (written before the limits) is reported within the same bound', async () => {
    const { s, call } = await setup()
    s.append('todo/write', { todos: plan(10_000, 30) })
    const result = await call([{ content: 'fresh start', status: 'in_progress' }])
    expect(result.text).toMatch(/and 9995 more\.$/)
    expect(result.text.length).toBeLessThan(600)
  })
})
