import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { renderToStaticMarkup } from 'react-dom/server'
import { foldEvents, isCancelledResult } from '@keel/door/transcript'
import { describe, expect, test } from 'vitest'
import { ApprovalCard } from '../src/client/components/ApprovalCard.tsx'
import { TodoPanel } from '../src/client/components/TodoPanel.tsx'
import { ToolRow } from '../src/client/components/ToolRow.tsx'
import { harnessLabel } from '../src/client/components/Transcript.tsx'
import type { TranscriptItem } from '../src/client/store.ts'
import type { TodoItem } from '../src/client/plan.ts'

const XSS = '<img src=x onerror=alert(1)>'
const PLAN: TodoItem[] = [
  { content: 'Read the code', status: 'completed' },
  { content: 'Write the fix', status: 'in_progress' },
  { content: 'Update the docs', status: 'in_progress' },
  { content: XSS, status: 'pending' },
]

function toolItem(
  name: string,
  args: unknown,
  result?: { isError: boolean; text: string },
): Extract<TranscriptItem, { kind: 'tool' }> {
  return {
    kind: 'tool',
    key: 'e1',
    seq: 1,
    callId: 'c1',
    name,
    arguments: typeof args === 'string' ? args : JSON.stringify(args),
    status: !result ? 'running' : !result.isError ? 'done' : isCancelledResult(result.text) ? 'cancelled' : 'error',
    ...(result ? { result } : {}),
  }
}

describe('TodoPanel', () => {
  test('renders nothing for an empty plan', () => {
    expect(renderToStaticMarkup(<TodoPanel todos={[]} />)).toBe('')
  })

  test('header counts, one line per item with a glyph per status, content as text', () => {
    const html = renderToStaticMarkup(<TodoPanel todos={PLAN} />)
    expect(html).toContain('>1 completed · 2 in progress · 1 pending<')
    expect(html.match(/data-testid="todo-item"/g)).toHaveLength(4)
    for (const status of ['completed', 'in_progress', 'pending']) expect(html).toContain(`glyph glyph-${status}`)
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;')
    expect(html).not.toContain('<img')
    expect(html).toContain('aria-expanded="true"')
  })
})

describe('ToolRow', () => {
  test('a todo_write row shows N/M completed with the first active item, and +n for the others', () => {
    const html = renderToStaticMarkup(
      <ToolRow item={toolItem('todo_write', { todos: PLAN }, { isError: false, text: 'ok' })} />,
    )
    expect(html).toContain('>1/4 completed · Write the fix<')
    expect(html).toContain('data-testid="todo-row-suffix">+1<')
  })

  test('a rejected write keeps the summary but not the suffix', () => {
    const html = renderToStaticMarkup(
      <ToolRow
        item={toolItem('todo_write', { todos: PLAN }, { isError: true, text: 'Error: 2 tasks are in_progress' })}
      />,
    )
    expect(html).toContain('>1/4 completed · Write the fix<')
    expect(html).not.toContain('todo-row-suffix')
    expect(html).toContain('Error: 2 tasks are in_progress')
  })

  test('unparseable todo_write arguments fall back to the generic row', () => {
    for (const args of [
      '{not json',
      '[]',
      '{"todos":"nope"}',
      '{"todos":[1]}',
      '{"todos":[{"content":"a","status":"doing"}]}',
    ]) {
      const html = renderToStaticMarkup(<ToolRow item={toolItem('todo_write', args)} />)
      expect(html, args).not.toContain('todo-row-summary')
      expect(html).toContain('>todo_write<')
    }
  })

  test("a task row nests its subagent's plan; markup in tool output stays text", () => {
    const html = renderToStaticMarkup(
      <ToolRow
        item={toolItem('task', { description: 'sub' }, { isError: false, text: XSS })}
        run={{ sessionId: 'child-1', description: 'sub', status: 'running', todos: PLAN }}
      />,
    )
    expect(html).toContain('data-testid="subagent-plan"')
    expect(html).toContain('1 completed · 2 in progress · 1 pending')
    expect(html).not.toContain('<img')
  })
})

test('no client code hands model text to the DOM as markup', () => {
  const root = join(import.meta.dirname, '../src/client')
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name))
      else if (/\.(tsx?|html)$/.test(entry.name)) files.push(join(dir, entry.name))
    }
  }
  walk(root)
  expect(files.length).toBeGreaterThan(5)
  for (const file of files)
    expect(readFileSync(file, 'utf8'), file).not.toMatch(
      /dangerouslySetInnerHTML|\.innerHTML\s*=|insertAdjacentHTML|document\.write/,
    )
})

describe('ApprovalCard and decisions', () => {
  const ask = {
    sessionId: 's',
    callId: 'c1',
    tool: 'edit',
    summary: `edit ${XSS}`,
    detail: `- old ${XSS}\n+ new`,
    suggestedRules: [`edit(${XSS})`],
    sessionRules: ['edit'],
    files: { local: '/r/.keel/settings.local.json', project: '/r/.keel/settings.json' },
    reason: `${XSS} is outside the working directory`,
  }

  test('the card shows the summary, the detail with its diff lines marked, and its answers; markup stays text', () => {
    const html = renderToStaticMarkup(<ApprovalCard ask={ask} subagent onAnswer={async () => {}} />)
    expect(html).toContain('Allow edit &lt;img src=x onerror=alert(1)&gt;?')
    expect(html).toContain(
      '<span class="del">- old &lt;img src=x onerror=alert(1)&gt;\n</span><span class="add">+ new</span>',
    )
    for (const id of ['allow-once', 'allow-session', 'allow-always', 'always-shared', 'deny', 'deny-reason'])
      expect(html).toContain(`data-testid="${id}"`)
    expect(html).toContain('“Always” saves to .keel/settings.local.json (only you)')
    // No rule can cover the call: no session or always answer is offered.
    const bare = renderToStaticMarkup(
      <ApprovalCard
        ask={{ ...ask, suggestedRules: [], sessionRules: [] }}
        subagent={false}
        onAnswer={async () => {}}
      />,
    )
    expect(bare).not.toContain('allow-always')
    expect(bare).not.toContain('allow-session')
    expect(html).toContain('asked by a subagent')
    expect(html).toContain(
      '<div class="approval-reason">&lt;img src=x onerror=alert(1)&gt; is outside the working directory</div>',
    )
    expect(html).not.toContain('<img')
  })

  test('a command that exited non-zero is a failed row: ✗ and its exit code, its output still shown', () => {
    const row = (code: number) => {
      const result = {
        isError: false,
        text: `building\n[exit code ${code} · 0.1 s]`,
        details: { kind: 'command' as const, exit: { kind: 'exited' as const, code } },
      }
      // The row's state is the shared fold's (@keel/door/transcript), as the store hands it over.
      const [entry] = foldEvents([
        { type: 'tool/call', seq: 0, time: 0, data: { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' } },
        {
          type: 'tool/result',
          seq: 1,
          time: 0,
          data: { turn: 1, step: 1, callId: 'c1', content: [{ type: 'text', text: result.text }], ...result },
          surfaceOp: { op: 'append' },
        },
      ] as never).entries
      const status = (entry as { status: 'done' | 'error' }).status
      return renderToStaticMarkup(<ToolRow item={{ ...toolItem('bash', { command: 'make' }), status, result }} />)
    }
    const failed = row(3)
    expect(failed).toContain('data-state="error"')
    expect(failed).toContain('data-testid="tool-failed">✗ exit 3<')
    expect(failed).toContain('building')
    const ok = row(0)
    expect(ok).toContain('data-state="ok"')
    expect(ok).not.toContain('tool-failed')
  })

  test('a row carries its decision line, or waits while asked', () => {
    const denied = renderToStaticMarkup(
      <ToolRow
        item={{
          ...toolItem('bash', { command: 'rm -rf build' }),
          asked: true,
          decision: { callId: 'c1', decision: 'deny', scope: 'rule', rule: 'bash(rm:*)' },
        }}
      />,
    )
    expect(denied).toContain('>✗ denied by rule bash(rm:*)<')
    expect(denied).toContain('permission-decision deny')
    const waiting = renderToStaticMarkup(
      <ToolRow item={{ ...toolItem('bash', { command: 'rm -rf build' }), asked: true }} />,
    )
    expect(waiting).toContain('Waiting for approval')
  })
})

test("a message the harness put in the person's place says what it is: a summary, a command the person ran, context", () => {
  expect(harnessLabel('compaction')).toBe('Summary of earlier conversation')
  expect(harnessLabel('shell')).toBe('You ran a command (with ! in the terminal)')
  expect(harnessLabel('context')).toBe('Context')
  expect(harnessLabel('constructor')).toBe('Context')
})
