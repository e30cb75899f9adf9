import { visibleWidth } from '@mariozechner/pi-tui'
import { describe, expect, test } from 'vitest'
import { applyEdit, type PlanEdit, type TodoItem, type TodoStatus } from '@keel/todo'
import { PlanFocus } from '../src/plan-focus.ts'
import { PlanPanel, planLines, planWindow, STALE_AFTER_CALLS } from '../src/plan-panel.ts'
import { plain, plainLines } from './support.ts'

const three: TodoItem[] = [
  { content: 'Read the failing test', status: 'completed' },
  { content: 'Fix the parser', status: 'in_progress' },
  { content: 'Run the suite', status: 'pending' },
]

function list(n: number, active: number): TodoItem[] {
  return Array.from({ length: n }, (_, i) => ({
    content: `Task ${i + 1}`,
    status: (i < active ? 'completed' : i === active ? 'in_progress' : 'pending') as TodoStatus,
  }))
}

function panel(todos: TodoItem[] | null): PlanPanel {
  const p = new PlanPanel()
  p.setPlan(todos)
  return p
}

describe('plan panel', () => {
  test('renders nothing while no plan stands, or for an empty list', () => {
    expect(panel(null).render(80)).toEqual([])
    expect(panel([]).render(80)).toEqual([])
  })

  test('three items: header with counts, one glyph line each', () => {
    expect(plainLines(panel(three).render(80))).toEqual([
      '',
      'Plan 1/3 · 1 in progress',
      '  ✓ Read the failing test',
      '  ◐ Fix the parser',
      '  ○ Run the suite',
    ])
  })

  test('styles: completed dimmed, in progress highlighted', () => {
    const [, , done, active] = panel(three).render(80)
    expect(done).toContain('\x1b[2mRead the failing test')
    expect(active).toContain('\x1b[1mFix the parser')
  })

  test('a long list collapses to the active item with its neighbours and +N more; the toggle shows all', () => {
    const p = panel(list(12, 6))
    expect(plainLines(p.render(80))).toEqual([
      '',
      'Plan 6/12 · 1 in progress  ctrl+t show all',
      '  ✓ 5 done',
      '  ✓ Task 6',
      '  ◐ Task 7',
      '  ○ Task 8',
      '  ○ Task 9',
      '  ○ Task 10',
      '  +2 more',
    ])
    p.toggle()
    const full = plainLines(p.render(80))
    expect(full[1]).toBe('Plan 6/12 · 1 in progress  ctrl+t collapse')
    expect(full.slice(2)).toEqual(list(12, 6).map((t, i) => `  ${i < 6 ? '✓' : i === 6 ? '◐' : '○'} ${t.content}`))
  })

  test('the window keeps the active item visible at either end', () => {
    expect(planWindow(list(12, 0))).toEqual({ start: 0, end: 5 })
    expect(planWindow(list(12, 11))).toEqual({ start: 7, end: 12 })
    expect(planWindow(list(12, 12))).toEqual({ start: 7, end: 12 })
    const collapsedStart = plainLines(panel(list(12, 0)).render(80))
    expect(collapsedStart.slice(2)).toEqual([
      '  ◐ Task 1',
      '  ○ Task 2',
      '  ○ Task 3',
      '  ○ Task 4',
      '  ○ Task 5',
      '  +7 more',
    ])
  })

  test('narrow width: every line fits, long content is cut with an ellipsis', () => {
    const todos: TodoItem[] = [
      ...three,
      { content: 'A rather long task description that cannot fit', status: 'pending' },
    ]
    for (const width of [1, 5, 12, 20]) {
      const lines = panel(todos).render(width)
      for (const line of lines) expect(visibleWidth(line)).toBeLessThanOrEqual(width)
    }
    expect(plainLines(panel(todos).render(20))).toEqual([
      '',
      'Plan 1/4 · 1 in pro…',
      '  ✓ Read the failin…',
      '  ◐ Fix the parser',
      '  ○ Run the suite',
      '  ○ A rather long t…',
    ])
    expect(plainLines(panel(todos).render(1))).toEqual(['', '…', '…', '…', '…', '…'])
  })

  test('control characters in todo content are shown, not obeyed', () => {
    const evil: TodoItem[] = [
      { content: 'Title \x1b]0;pwned\x07 and \x1b[2J clear', status: 'in_progress' },
      { content: 'C1 \u009b31m and bell \x07 and\nnewline', status: 'pending' },
    ]
    const lines = panel(evil).render(120)
    for (const line of lines) {
      // Only our own SGR codes may carry ESC; no OSC, no other CSI, no BEL, no C1, no newline.
      expect(line.replace(/\x1b\[[0-9;]*m/g, '')).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
    }
    const text = plainLines(lines)
    expect(text[2]).toContain('␛]0;pwned␇')
    expect(text[2]).toContain('␛[2J')
    expect(text[3]).toContain('\\x9b31m')
    expect(text[3]).toContain('and newline')
  })
})

describe('staleness', () => {
  const todos = [
    { content: 'Read', status: 'completed' as const },
    { content: 'Fix', status: 'in_progress' as const },
  ]
  test('the header says how old the plan is once it looks stale, and only while a task is in progress', () => {
    expect(plain(planLines(todos, 80, { staleCalls: STALE_AFTER_CALLS - 1 })[0]!)).toBe('Plan 1/2 · 1 in progress')
    expect(plain(planLines(todos, 80, { staleCalls: STALE_AFTER_CALLS })[0]!)).toBe(
      `Plan 1/2 · 1 in progress · updated ${STALE_AFTER_CALLS} tool calls ago`,
    )
    const done = todos.map((todo) => ({ ...todo, status: 'completed' as const }))
    expect(plain(planLines(done, 80, { staleCalls: 20 })[0]!)).toBe('Plan 2/2')
  })
})

describe('plan panel under the keys', () => {
  // The host applies each edit with the todo package's own applyEdit, as the plans service does before its rules.
  function focused(todos: TodoItem[]) {
    const p = panel(todos)
    const sent: PlanEdit[] = []
    const focus = new PlanFocus({
      plan: () => p.plan,
      edit: (edit) => {
        sent.push(edit)
        const next = applyEdit(p.plan ?? [], edit)
        if ('error' in next) return next.error
        p.setPlan(next.todos)
        return undefined
      },
      focusInput: () => {},
      render: () => {
        p.focus = focus.active
      },
    })
    focus.toggle()
    return { p, focus, sent }
  }

  test('a long list shows whole with the cursor; the keys are edits; esc lets go', () => {
    const { p, focus, sent } = focused(list(12, 0))
    expect(plainLines(p.render(80))).toHaveLength(14)
    expect(plainLines(p.render(80))[2]).toBe('› ◐ Task 1')
    for (const key of ['j', 'J', 'x', ' ', 'd']) focus.handleKey(key)
    expect(sent).toEqual([
      { op: 'move', index: 1, to: 2 },
      { op: 'status', index: 2, status: 'completed' },
      { op: 'status', index: 2, status: 'pending' },
      { op: 'delete', index: 2 },
    ])
    expect(p.plan!.map((todo) => todo.content).slice(0, 3)).toEqual(['Task 1', 'Task 3', 'Task 4'])
    focus.handleKey('a')
    expect(plain(p.render(80).at(-1)!).trimEnd()).toBe('  add: >')
    for (const key of ['N', 'e', 'w', '\r']) focus.handleKey(key)
    expect(sent.at(-1)).toEqual({ op: 'add', content: 'New' })
    expect(plainLines(p.render(80)).find((line) => line.startsWith('›'))).toBe('› ○ New')
    // Typed letters never reach the editor while the panel has the keys.
    expect(focus.handleKey('q')).toBe(true)
    focus.handleKey('\x1b')
    expect(focus.active).toBeUndefined()
    const after = plainLines(p.render(80))
    expect(after.some((line) => line.includes('› '))).toBe(false)
    expect(after.at(-1)).toMatch(/\+\d+ more/)
  })
})
