import { useState } from 'react'
import type { Proposal, ProposalAnswer, TodoItem } from '@keel/todo/plan'
import { LazyMarkdown as Markdown } from '../markdown/LazyMarkdown.tsx'
import { TodoList } from './TodoList.tsx'

/** Sends an answer to the host; resolves to the host's refusal (the rule it names), or undefined when it took it. */
export type AnswerPlan = (answer: ProposalAnswer) => Promise<string | undefined>

/**
 * A plan the model proposed in plan mode: its Markdown and checklist, and while it waits the person's answers:
 * approve to run in ask or auto mode, edit the text and the checklist (one task a line), or reject with a sentence.
 * Every tab shows the same card, from the log; the first answer wins.
 */
export function ProposalCard({
  proposal,
  head,
  onAnswer,
}: {
  proposal: Proposal
  head: string
  onAnswer?: AnswerPlan
}) {
  const [editing, setEditing] = useState(false)
  const [plan, setPlan] = useState(proposal.plan)
  const [items, setItems] = useState(proposal.todos.map((todo) => todo.content).join('\n'))
  const [why, setWhy] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [sending, setSending] = useState(false)
  const pending = proposal.status === 'pending' && onAnswer
  const send = async (answer: ProposalAnswer) => {
    setSending(true)
    try {
      const refused = await onAnswer?.(answer)
      setError(refused ?? null)
      if (!refused && answer.kind === 'edit') setEditing(false)
    } finally {
      setSending(false)
    }
  }
  const draft = (): { plan: string; todos: TodoItem[] } => ({
    plan,
    todos: items
      .split('\n')
      .filter((line) => line.trim())
      .map((content) => ({ content, status: 'pending' })),
  })
  return (
    <section className={`proposal ${proposal.status}`} data-testid="proposal-card" data-status={proposal.status}>
      <div className="proposal-head">{head}</div>
      {editing ? (
        <>
          <textarea
            className="proposal-text"
            data-testid="proposal-text"
            aria-label="Plan"
            value={plan}
            onChange={(event) => setPlan(event.target.value)}
          />
          <textarea
            className="proposal-items"
            data-testid="proposal-items"
            aria-label="Checklist, one task a line"
            value={items}
            onChange={(event) => setItems(event.target.value)}
          />
        </>
      ) : (
        <>
          <div className="message-text">
            <Markdown text={proposal.plan} />
          </div>
          <TodoList todos={proposal.todos} compact />
        </>
      )}
      {error && (
        <div className="notice error" role="alert" data-testid="proposal-error">
          {error}
        </div>
      )}
      {pending && (
        <div className="approval-actions">
          {editing ? (
            <button
              type="button"
              data-testid="proposal-save"
              disabled={sending}
              onClick={() => void send({ kind: 'edit', ...draft() })}
            >
              Save edits
            </button>
          ) : (
            <button type="button" data-testid="proposal-edit" onClick={() => setEditing(true)}>
              Edit
            </button>
          )}
          <button
            type="button"
            className="allow"
            data-testid="proposal-approve-ask"
            disabled={sending}
            onClick={() => void send({ kind: 'approve', mode: 'ask', ...(editing ? draft() : {}) })}
          >
            Approve, ask before changes
          </button>
          <button
            type="button"
            className="allow"
            data-testid="proposal-approve-auto"
            disabled={sending}
            onClick={() => void send({ kind: 'approve', mode: 'auto', ...(editing ? draft() : {}) })}
          >
            Approve, auto
          </button>
          <input
            className="approval-why"
            data-testid="proposal-reject-text"
            aria-label="Why reject (the model reads it)"
            placeholder="Why reject? The model reads it and keeps planning"
            value={why}
            onChange={(event) => setWhy(event.target.value)}
          />
          <button
            type="button"
            className="deny"
            data-testid="proposal-reject"
            disabled={sending || !why.trim()}
            onClick={() => void send({ kind: 'reject', message: why })}
          >
            Reject
          </button>
        </div>
      )}
    </section>
  )
}
