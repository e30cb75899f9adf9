import { describe, expect, test } from 'vitest'
import { Session, SESSION_FORMAT_VERSION } from '@keel/session'
import '@keel/todo'

function session() {
  return new Session({ type: 'session', version: SESSION_FORMAT_VERSION, id: 's1', createdAt: 0, cwd: '/tmp' })
}

function openTurn(s: Session) {
  s.append('turn/start', { turn: 1, trigger: 'prompt' })
  s.append('step/start', { turn: 1, step: 1 })
  s.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: 'plan it' }] } },
    { surfaceOp: { op: 'append' } },
  )
}

describe('todo/write event', () => {
  test("appends a frozen snapshot: later changes to the caller's list change nothing", () => {
    const s = session()
    openTurn(s)
    const todos = [{ content: 'a', status: 'pending' as const }]
    const event = s.append('todo/write', { todos })
    todos[0]!.content = 'changed'
    todos.push({ content: 'b', status: 'pending' })
    expect(event.data.todos).toEqual([{ content: 'a', status: 'pending' }])
    expect(Object.isFrozen(event.data.todos)).toBe(true)
    expect(Object.isFrozen(event.data.todos[0])).toBe(true)
  })

  test('last write wins', () => {
    const s = session()
    openTurn(s)
    s.append('todo/write', { todos: [{ content: 'a', status: 'pending' }] })
    s.append('todo/write', {
      todos: [
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress' },
      ],
    })
    const writes = s.events.filter((e) => e.type === 'todo/write')
    expect(writes).toHaveLength(2)
    expect(writes.at(-1)!.data).toEqual({
      todos: [
        { content: 'a', status: 'completed' },
        { content: 'b', status: 'in_progress' },
      ],
    })
  })

  test('is not a surface event: deriveMessages is identical before and after, and surfaceOp is refused', () => {
    const s = session()
    openTurn(s)
    const before = s.deriveMessages()
    const folds = s.surfaceFolds
    s.append('todo/write', { todos: [{ content: 'a', status: 'in_progress' }] })
    expect(s.deriveMessages()).toEqual(before)
    expect(s.surfaceFolds).toBe(folds)
    expect(s.surfaceNodes).not.toContain(s.seq - 1)
    // @ts-expect-error surface metadata is forbidden for non-surface events at compile time
    expect(() => s.append('todo/write', { todos: [] }, { surfaceOp: { op: 'append' } })).toThrow(/not a surface event/)
  })
})
