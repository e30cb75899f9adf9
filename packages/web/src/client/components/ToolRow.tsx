import { useState, type ReactNode } from 'react'
import { failureLabel } from '@keel/session/text'
import { lastLines, rowsOf, type DiffRow } from '../diff.ts'
import { describeDecision } from '../permission.ts'
import { countsLabel, parseTodoArgs, todoRowSummary, type SubagentPlan } from '../plan.ts'
import type { TranscriptItem } from '../store.ts'
import { TodoList } from './TodoList.tsx'

type ToolItem = Extract<TranscriptItem, { kind: 'tool' }>

const MAX_SHOWN = 20_000

function clip(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters)` : text
}

function prettyArguments(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2)
  } catch {
    return raw
  }
}

export type ToolState = 'running' | 'ok' | 'error' | 'cancelled'

/** The row's state: whether a call failed is `resultStatus`'s answer (@keel/session), as in every other door. */
function stateOf(item: ToolItem): ToolState {
  return item.status === 'done' ? 'ok' : item.status
}

/** A tool call in the transcript: `todo_write` gets its plan summary, `task` its subagent's plan, others a generic row. */
export function ToolRow({ item, output, run }: { item: ToolItem; output?: string; run?: SubagentPlan }) {
  if (item.name === 'todo_write') {
    const todos = parseTodoArgs(item.arguments)
    if (todos) {
      const { summary, suffix } = todoRowSummary(todos, item.result?.isError === true)
      return (
        <Row
          item={item}
          label="Update plan"
          summary={
            <>
              <span className="row-summary" data-testid="todo-row-summary">
                {summary}
              </span>
              {suffix && (
                <span className="row-suffix" data-testid="todo-row-suffix">
                  {suffix}
                </span>
              )}
            </>
          }
        >
          <TodoList todos={todos} compact />
          {item.result?.isError && <pre className="tool-result error">{clip(item.result.text)}</pre>}
        </Row>
      )
    }
  }
  const nested = item.name === 'task' && run ? <SubagentPlanView run={run} /> : null
  const diff = diffOf(item)
  const state = stateOf(item)
  const failed = item.result ? failureLabel(item.result.details) : undefined
  // A command that failed shows its output's tail, as a success does; the row's mark says how it ended.
  const tail = output && !item.result ? output : item.result && (!item.result.isError || failed) ? item.result.text : ''
  return (
    <Row
      item={item}
      label={item.name}
      summary={<span className="row-summary">{summaryOf(item)}</span>}
      after={
        <>
          {diff ? (
            <DiffView diff={diff} />
          ) : (
            tail.trim() && (
              <pre className="tool-preview" data-testid="tool-preview">
                {lastLines(tail, PREVIEW_LINES)}
              </pre>
            )
          )}
          {state === 'error' && item.result && !failed && <ErrorLine text={item.result.text} />}
          {nested}
        </>
      }
    >
      <pre className="tool-args">{clip(prettyArguments(item.arguments))}</pre>
      {output && !item.result && <pre className="tool-output">{output}</pre>}
      {item.result && (
        <pre className={state === 'error' ? 'tool-result error' : 'tool-result'}>{clip(item.result.text)}</pre>
      )}
    </Row>
  )
}

/** Lines of a tool's output shown in its row without a click. */
const PREVIEW_LINES = 4

/** The call's title without the tool's name when the title starts with it ("Edit a.txt" under `edit` reads "a.txt"). */
export function summaryOf(item: ToolItem): string {
  const title = item.view?.title ?? ''
  if (!title || title === item.name) return ''
  const [first, ...rest] = title.split(' ')
  return first!.toLowerCase() === item.name.toLowerCase() ? rest.join(' ') : title
}

/** What an `edit` or `write` changed, from its result's `details`; none for a result logged without them. */
function diffOf(item: ToolItem): { rows: DiffRow[]; note: string } | undefined {
  const details = item.result?.details
  if (!item.result || item.result.isError || details?.kind !== 'diff') return undefined
  return { rows: rowsOf(details), note: item.result.text.split('\n')[0]! }
}

/** Diffs longer than this are collapsed to their first rows until the reader expands them. */
const DIFF_COLLAPSED_ROWS = 40

function DiffView({ diff }: { diff: { rows: DiffRow[]; note: string } }) {
  const [expanded, setExpanded] = useState(false)
  const long = diff.rows.length > DIFF_COLLAPSED_ROWS
  const rows = long && !expanded ? diff.rows.slice(0, DIFF_COLLAPSED_ROWS) : diff.rows
  return (
    <div className="diff" data-testid="diff">
      {diff.note && <div className="diff-note">{diff.note}</div>}
      {rows.length > 0 && (
        <div className="diff-scroll">
          <table className="diff-table">
            <tbody>
              {rows.map((row, i) => (
                <DiffLine key={i} row={row} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {long && (
        <button type="button" className="diff-toggle" data-testid="diff-toggle" onClick={() => setExpanded(!expanded)}>
          {expanded ? 'Show less' : `Show all ${diff.rows.length} lines`}
        </button>
      )}
    </div>
  )
}

function DiffLine({ row }: { row: DiffRow }) {
  if (row.kind === 'hunk' || row.kind === 'note') {
    return (
      <tr className={`diff-row diff-${row.kind}`}>
        <td className="diff-no" />
        <td className="diff-no" />
        <td className="diff-text">{row.text}</td>
      </tr>
    )
  }
  const sign = row.kind === 'add' ? '+' : row.kind === 'del' ? '-' : ' '
  return (
    <tr className={`diff-row diff-${row.kind}`} data-testid={`diff-${row.kind}`}>
      <td className="diff-no">{row.kind === 'add' ? '' : row.oldLine}</td>
      <td className="diff-no">{row.kind === 'del' ? '' : row.newLine}</td>
      <td className="diff-text">
        <span className="diff-sign" aria-hidden="true">
          {sign}
        </span>
        {row.text}
      </td>
    </tr>
  )
}

/** A failed call's error: one line in the row, the whole text a click away. */
function ErrorLine({ text }: { text: string }) {
  const [open, setOpen] = useState(false)
  const multi = text.includes('\n') || text.length > 120
  return (
    <div className={open ? 'tool-error open' : 'tool-error'} data-testid="tool-error">
      <span className="tool-error-text">{open ? clip(text) : text.split('\n')[0]}</span>
      {multi && (
        <button type="button" className="tool-error-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'less' : 'full error'}
        </button>
      )}
    </div>
  )
}

function Row({
  item,
  label,
  summary,
  children,
  after,
}: {
  item: ToolItem
  label: string
  summary: ReactNode
  children: ReactNode
  after?: ReactNode
}) {
  const state = stateOf(item)
  const verdict = item.decision && describeDecision(item.decision)
  return (
    <div className="tool-block" data-testid="tool-row" data-tool={item.name} data-state={state}>
      <details className="tool-row">
        <summary>
          <span className={`tool-state ${state}`} aria-hidden="true" />
          <span className="tool-name">{label}</span>
          {summary}
          {state === 'cancelled' && (
            <span className="row-state" data-testid="tool-cancelled">
              cancelled
            </span>
          )}
          {state === 'error' && (
            <span className="row-state error" data-testid="tool-failed">
              ✗ {(item.result && failureLabel(item.result.details)) ?? 'error'}
            </span>
          )}
        </summary>
        <div className="tool-body">{children}</div>
      </details>
      {verdict && (
        <div
          className={`permission-decision ${item.decision!.decision} ${item.decision!.scope}`}
          data-testid="permission-decision"
        >
          {verdict}
        </div>
      )}
      {item.hooks?.map((hook, i) => (
        <div key={i} className={`hook-run ${hook.tone}`} data-testid="hook-run">
          {hook.text}
        </div>
      ))}
      {item.asked && !item.decision && !item.result && (
        <div className="permission-decision waiting">Waiting for approval</div>
      )}
      {after}
    </div>
  )
}

/** A delegated task's own plan, nested under its `task` row. */
function SubagentPlanView({ run }: { run: SubagentPlan }) {
  const todos = run.todos ?? []
  return (
    <div className="subagent-plan" data-testid="subagent-plan">
      <div className="subagent-head">
        <span className="subagent-status">{run.status}</span>
        {todos.length > 0 && <span className="subagent-counts">{countsLabel(todos)}</span>}
      </div>
      {todos.length > 0 && <TodoList todos={todos} compact />}
    </div>
  )
}
