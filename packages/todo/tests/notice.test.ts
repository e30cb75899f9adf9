import { describe, expect, test } from 'vitest'
import { isTodoItem, openTasks, openTasksNotice, parseTodoList } from '@keel/todo/plan'

describe('the open-tasks notice, worded once', () => {
  test('counts, pluralises and quotes the tasks; head and names join into the text', () => {
    expect(openTasksNotice(['Write the fix'])).toEqual({
      head: 'the turn ended with 1 open task',
      names: '"Write the fix"',
      text: 'the turn ended with 1 open task: "Write the fix"',
    })
    expect(openTasksNotice(['a', 'b']).text).toBe('the turn ended with 2 open tasks: "a", "b"')
  })

  test('task text is escaped for a terminal and quoted as JSON: no control reaches the screen, quotes stay apart', () => {
    const { names } = openTasksNotice(['Ask \x1b[2Jthe user', 'say "hi"\nthen \\ go'])
    expect(names).toBe('"Ask ␛[2Jthe user", "say \\"hi\\" then \\\\ go"')
  })

  test('open tasks are the ones not completed, in order', () => {
    expect(
      openTasks([
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'pending' },
        { content: 'c', status: 'in_progress' },
      ]),
    ).toEqual(['b', 'c'])
    expect(openTasks(null)).toEqual([])
  })
})

describe('reading a plan from JSON', () => {
  test('a todo item has string content and a known status', () => {
    expect(isTodoItem({ content: 'a', status: 'pending', extra: 1 })).toBe(true)
    for (const value of [null, 'a', [], { content: 1, status: 'pending' }, { content: 'a', status: 'done' }, {}])
      expect(isTodoItem(value), JSON.stringify(value)).toBe(false)
  })

  test('a list is copied item by item, or null when any item is malformed', () => {
    const list = [{ content: 'a', status: 'pending', extra: 1 }]
    expect(parseTodoList(list)).toEqual([{ content: 'a', status: 'pending' }])
    expect(parseTodoList([...list, { content: 'b' }])).toBeNull()
    expect(parseTodoList({})).toBeNull()
    expect(parseTodoList([])).toEqual([])
  })
})
