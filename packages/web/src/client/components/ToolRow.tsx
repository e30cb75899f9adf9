import type { ReactNode } from 'react'
import { decisionText } from '../permission.ts'
import { countsLabel, parseTodoArgs, todoRowSummary, type SubagentRun } from '../plan.ts'
import type { TranscriptItem } from '../store.ts'
import { TodoList } from './TodoList.tsx'

type ToolItem = Extract<TranscriptItem, { kind: 'tool' }>

const MAX_SHOWN = 20_000

function clip(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters)` : text
}

function prettyArguments(raw: string): string {
  try { return JSON.stringify(JSON.parse(raw), null, 2) } catch { return raw }
}

function stateOf(item: ToolItem): 'running' | 'ok' | 'error' {
  return item.result ? (item.result.isError ? 'error' : 'ok') : 'running'
}

/** A tool call in the transcript: `todo_write` gets its plan summary, `task` its subagent's plan, others a generic row. */
export function ToolRow({ item, output, run }: { item: ToolItem; output?: string; run?: SubagentRun }) {
  if (item.name === 'todo_write') {
    const todos = parseTodoArgs(item.arguments)
    if (todos) {
      const { summary, suffix } = todoRowSummary(todos, item.result?.isError === true)
      return (
        <Row item={item} label="Update plan" summary={
          <>
            <span className="row-summary" data-testid="todo-row-summary">{summary}</span>
            {suffix && <span className="row-suffix" data-testid="todo-row-suffix">{suffix}</span>}
          </>
        }>
          <TodoList todos={todos} compact />
          {item.result?.isError && <pre className="tool-result error">{clip(item.result.text)}</pre>}
        </Row>
      )
    }
  }
  const title = item.view?.title && item.view.title !== item.name ? item.view.title : ''
  const nested = item.name === 'task' && run ? <SubagentPlan run={run} /> : null
  return (
    <Row item={item} label={item.name} summary={<span className="row-summary">{title}</span>} after={nested}>
      <pre className="tool-args">{clip(prettyArguments(item.arguments))}</pre>
      {output && !item.result && <pre className="tool-output">{output}</pre>}
      {item.result && <pre className={item.result.isError ? 'tool-result error' : 'tool-result'}>{clip(item.result.text)}</pre>}
    </Row>
  )
}

function Row({ item, label, summary, children, after }: { item: ToolItem; label: string; summary: ReactNode; children: ReactNode; after?: ReactNode }) {
  const state = stateOf(item)
  const verdict = item.decision && decisionText(item.decision)
  return (
    <div className="tool-block" data-testid="tool-row" data-tool={item.name} data-state={state}>
      <details className="tool-row">
        <summary>
          <span className={`tool-state ${state}`} aria-label={state} />
          <span className="tool-name">{label}</span>
          {summary}
        </summary>
        <div className="tool-body">{children}</div>
      </details>
      {verdict && <div className={`permission-decision ${item.decision!.decision} ${item.decision!.scope}`} data-testid="permission-decision">{verdict}</div>}
      {item.asked && !item.decision && !item.result && <div className="permission-decision waiting">Waiting for approval</div>}
      {after}
    </div>
  )
}

/** A delegated task's own plan, nested under its `task` row. */
function SubagentPlan({ run }: { run: SubagentRun }) {
  const todos = run.todos ?? []
  return (
    <div className="subagent-plan" data-testid="subagent-plan">
      <div className="subagent-head">
        <span className="subagent-status">{run.status ?? 'running'}</span>
        {todos.length > 0 && <span className="subagent-counts">{countsLabel(todos)}</span>}
      </div>
      {todos.length > 0 && <TodoList todos={todos} compact />}
    </div>
  )
}
