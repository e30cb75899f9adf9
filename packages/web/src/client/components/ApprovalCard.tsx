import { useState } from 'react'
import type { PermissionAnswer, PermissionAsk } from '../../protocol.ts'

export type AnswerAsk = (ask: PermissionAsk, answer: PermissionAnswer) => Promise<void>

/**
 * A tool call waiting for approval: its summary, the command or diff in full, and the three answers. Every tab shows
 * the card; the first answer wins and the card leaves every tab when the decision lands.
 */
export function ApprovalCard({
  ask,
  subagent,
  onAnswer,
}: {
  ask: PermissionAsk
  subagent: boolean
  onAnswer: AnswerAsk
}) {
  const [sending, setSending] = useState(false)
  const answer = async (value: PermissionAnswer) => {
    setSending(true)
    try {
      await onAnswer(ask, value)
    } finally {
      setSending(false)
    }
  }
  return (
    // biome-ignore lint/a11y/useSemanticElements: a fieldset's default border and min-width would break the card's layout
    <div
      className="approval"
      role="group"
      aria-label="Permission request"
      data-testid="approval-card"
      data-call={ask.callId}
    >
      <div className="approval-head">
        <span className="approval-title">Allow {ask.summary}?</span>
        {subagent && <span className="approval-origin">asked by a subagent</span>}
      </div>
      {ask.reason && <div className="approval-reason">{ask.reason}</div>}
      {ask.detail && (
        <pre className="approval-detail" data-testid="approval-detail">
          {ask.tool === 'edit' ? <DiffLines text={ask.detail} /> : ask.detail}
        </pre>
      )}
      <div className="approval-actions">
        <button
          type="button"
          className="allow"
          data-testid="allow-once"
          disabled={sending}
          onClick={() => void answer({ decision: 'allow', scope: 'once' })}
        >
          Allow once
        </button>
        <button
          type="button"
          className="always"
          data-testid="allow-always"
          disabled={sending}
          title={`Adds ${ask.suggestedRule} to the project's .keel/settings.json`}
          onClick={() => void answer({ decision: 'allow', scope: 'always' })}
        >
          Always allow <code>{ask.suggestedRule}</code>
        </button>
        <button
          type="button"
          className="deny"
          data-testid="deny"
          disabled={sending}
          onClick={() => void answer({ decision: 'deny', scope: 'once' })}
        >
          Deny
        </button>
      </div>
    </div>
  )
}

/** An edit's two sides, `-` lines and `+` lines marked (as text: nothing in them is markup). */
function DiffLines({ text }: { text: string }) {
  const lines = text.split('\n')
  return (
    <>
      {lines.map((line, i) => (
        <span key={i} className={line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : undefined}>
          {line}
          {i < lines.length - 1 ? '\n' : ''}
        </span>
      ))}
    </>
  )
}
