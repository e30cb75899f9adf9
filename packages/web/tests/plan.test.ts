import { describe, expect, test } from 'vitest'
import { countsLabel, parseSubagentPlans, parseTodoArgs, todoRowSummary, type TodoItem } from '../src/client/plan.ts'

const parallel: TodoItem[] = [
  { content: 'Write the fixture', status: 'completed' },
  { content: 'Implement fixture samples', status: 'in_progress' },
  { content: 'Wire the panel', status: 'in_progress' },
  { content: 'Ship', status: 'pending' },
]

describe('plan summaries', () => {
  test('the parallel-plan fixture: row summary, suffix and panel counts', () => {
    expect(todoRowSummary(parallel)).toEqual({ summary: '1/4 completed · Implement fixture samples', suffix: '+1' })
    expect(countsLabel(parallel)).toBe('1 completed · 2 in progress · 1 pending')
  })

  test('zero counts are left out; no active item means no name and no suffix', () => {
    expect(countsLabel([{ content: 'a', status: 'pending' }])).toBe('1 pending')
    expect(countsLabel([])).toBe('')
    expect(
      todoRowSummary([
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'pending' },
      ]),
    ).toEqual({ summary: '1/2 completed', suffix: null })
  })

  test('a blank first active item is not named and so gets no suffix', () => {
    expect(
      todoRowSummary([
        { content: '  ', status: 'in_progress' },
        { content: 'b', status: 'in_progress' },
      ]),
    ).toEqual({ summary: '0/2 completed', suffix: null })
  })

  test('multi-line content is shown on one line', () => {
    expect(todoRowSummary([{ content: 'fix\n  the bug', status: 'in_progress' }]).summary).toBe(
      '0/1 completed · fix the bug',
    )
  })

  test('error rows drop the suffix', () => {
    expect(todoRowSummary(parallel, true)).toEqual({
      summary: '1/4 completed · Implement fixture samples',
      suffix: null,
    })
  })
})

describe('parsing untrusted shapes', () => {
  test('todo_write arguments: anything but { todos: [{ content, status }] } is null', () => {
    expect(parseTodoArgs(JSON.stringify({ todos: parallel }))).toEqual(parallel)
    expect(parseTodoArgs({ todos: [] })).toEqual([])
    for (const raw of [
      '',
      '{',
      'null',
      '[]',
      '"x"',
      '{"todos":{}}',
      '{"todos":[null]}',
      '{"todos":["a"]}',
      '{"todos":[{"content":1,"status":"pending"}]}',
      '{"todos":[{"content":"a","status":"done"}]}',
    ]) {
      expect(parseTodoArgs(raw), raw).toBeNull()
    }
  })

  test('subagentPlans: whole plans are kept, the rest skipped', () => {
    expect(
      parseSubagentPlans({
        a: { sessionId: 's', description: 'd', status: 'running', todos: null },
        b: { sessionId: 's', description: 'd', status: 'completed', todos: parallel },
        c: parallel,
        d: { sessionId: 's', description: 'd', status: 'running', todos: [{ content: 'x' }] },
        e: 'nope',
        f: { todos: parallel },
        g: { sessionId: 's', description: 'd', status: 'finished', todos: null },
      }),
    ).toEqual({
      a: { sessionId: 's', description: 'd', status: 'running', todos: null },
      b: { sessionId: 's', description: 'd', status: 'completed', todos: parallel },
    })
    for (const value of [null, undefined, [], 'x', 3]) expect(parseSubagentPlans(value)).toEqual({})
  })
})
