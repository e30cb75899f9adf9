import { useState } from 'react'
import type { PermissionAnswer, PermissionAsk } from '../../protocol.ts'

export type AnswerAsk = (ask: PermissionAsk, answer: PermissionAnswer) => Promise<void>

/**
 * A tool call waiting for approval: its summary, the command or diff in full, and the answers (once, this session,
 * always to the personal or the shared file, deny with an optional sentence for the model). Every tab shows
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
  const [shared, setShared] = useState(false)
  const [why, setWhy] = useState('')
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
        {ask.sessionRules.length > 0 && (
          <button
            type="button"
            className="always"
            data-testid="allow-session"
            disabled={sending}
            title={`Holds ${ask.sessionRules.join(', ')} for the rest of this session`}
            onClick={() => void answer({ decision: 'allow', scope: 'session' })}
          >
            Allow for this session <code>{ask.sessionRules.join(', ')}</code>
          </button>
        )}
        {ask.suggestedRules.length > 0 && (
          <button
            type="button"
            className="always"
            data-testid="allow-always"
            disabled={sending}
            title={`Adds ${ask.suggestedRules.join(', ')} to ${shared ? ask.files?.project : ask.files?.local}`}
            onClick={() => void answer({ decision: 'allow', scope: 'always', file: shared ? 'project' : 'local' })}
          >
            Always allow <code>{ask.suggestedRules.join(', ')}</code>
          </button>
        )}
        <button
          type="button"
          className="deny"
          data-testid="deny"
          disabled={sending}
          onClick={() =>
            void answer({ decision: 'deny', scope: 'once', ...(why.trim() ? { message: why.trim() } : {}) })
          }
        >
          Deny
        </button>
      </div>
      <div className="approval-extra">
        {ask.suggestedRules.length > 0 && (
          <label>
            <input
              type="checkbox"
              data-testid="always-shared"
              checked={shared}
              onChange={(event) => setShared(event.target.checked)}
            />{' '}
            “Always” saves to {shared ? '.keel/settings.json (shared)' : '.keel/settings.local.json (only you)'}
          </label>
        )}
        <input
          type="text"
          className="approval-why"
          data-testid="deny-reason"
          placeholder="Why deny? (the model reads this)"
          value={why}
          maxLength={2000}
          onChange={(event) => setWhy(event.target.value)}
        />
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
