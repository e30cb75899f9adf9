import { afterEach, describe, expect, test } from 'vitest'
import { standingPlan } from '@keel/todo'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const write = (todos: unknown) => ({ toolCalls: [{ name: 'todo_write', arguments: { todos } }] })

describe('todo_write through the real agent loop', () => {
  test('the scripted model plans, updates and finishes; each write replaces the last; the model sees only call and result', async () => {
    keel = await makeKeel({
      steps: [
        write([
          { content: 'Read the code', status: 'in_progress' },
          { content: 'Fix the bug', status: 'pending' },
        ]),
        {
          toolCalls: [
            { name: 'bash', arguments: { command: 'echo reading' } },
            {
              name: 'todo_write',
              arguments: {
                todos: [
                  { content: 'Read the code', status: 'completed' },
                  { content: 'Fix the bug', status: 'in_progress' },
                ],
              },
            },
          ],
        },
        { text: 'Fixed.' },
      ],
    })
    const agent = keel.agent()
    const result = await agent.prompt('fix the bug')
    expect(result.reason).toBe('completed')
    const types = agent.session.events.map((e) => e.type)
    const writes = agent.session.events.filter((e) => e.type === 'todo/write')
    expect(writes).toHaveLength(2)
    // Appended mid-step, between its tool/call and tool/result.
    const first = types.indexOf('todo/write')
    expect(types[first - 1]).toBe('tool/call')
    expect(types[first + 1]).toBe('tool/result')
    expect(standingPlan(agent.session.events)).toEqual([
      { content: 'Read the code', status: 'completed' },
      { content: 'Fix the bug', status: 'in_progress' },
    ])
    // The third request carries the todo_write calls and their short results, and no trace of the todo/write events.
    const third = keel.model.requests[2]!
    const toolResults = third.messages
      .filter((m) => m.role === 'tool')
      .map((m) => textOfContent((m.content[0] as { content: { type: string; text?: string }[] }).content))
    expect(toolResults).toContain('Todo list updated: 0 completed, 1 in progress, 1 pending.')
    expect(toolResults).toContain('Todo list updated: 1 completed, 1 in progress, 0 pending.')
    expect(JSON.stringify(third.messages)).not.toContain('todo/write')
    expect(third.messages).toEqual(agent.session.deriveMessages().slice(0, third.messages.length))
  })

  test('a rejected call leaves the log untouched and the next request carries the error', async () => {
    keel = await makeKeel({
      steps: [
        write([
          { content: 'a', status: 'in_progress' },
          { content: 'b', status: 'in_progress' },
        ]),
        write([
          { content: 'a', status: 'in_progress' },
          { content: 'b', status: 'pending' },
        ]),
        { text: 'ok' },
      ],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    const writes = agent.session.events.filter((e) => e.type === 'todo/write')
    expect(writes).toHaveLength(1)
    expect(writes[0]!.data.todos).toEqual([
      { content: 'a', status: 'in_progress' },
      { content: 'b', status: 'pending' },
    ])
    const second = keel.model.requests[1]!
    const last = second.messages.at(-1)!
    expect(last.role).toBe('tool')
    const block = last.content[0] as { isError: boolean; content: { type: string; text?: string }[] }
    expect(block.isError).toBe(true)
    expect(textOfContent(block.content)).toMatch(/^Error: 2 tasks are in_progress/)
  })

  test('a new turn clears the standing plan; the old plan stays on the log', async () => {
    keel = await makeKeel({
      steps: [write([{ content: 'a', status: 'completed' }]), { text: 'done' }, { text: 'hello again' }],
    })
    const agent = keel.agent()
    await agent.prompt('one')
    expect(keel.ctx.projections.get(agent.session, 'todos')).toEqual([{ content: 'a', status: 'completed' }])
    await agent.prompt('two')
    expect(keel.ctx.projections.get(agent.session, 'todos')).toBeNull()
    expect(agent.session.events.filter((e) => e.type === 'todo/write')).toHaveLength(1)
  })
})
