import { useCallback, useEffect, useRef, useState } from 'react'
import type { RewindDone, RewindFileChange, RewindPreviewInfo, RewindScope } from '../../protocol.ts'

/** What "Rewind to here" asks of the host (the App binds them to the open session). */
export interface RewindActions {
  preview(seq: number, scope: RewindScope): Promise<RewindPreviewInfo>
  rewind(seq: number, scope: RewindScope, overwrite: string[]): Promise<RewindDone>
  /** The rewind is done: open the fork (with `prompt` ready to edit and resend), or say what changed. */
  done(result: RewindDone, prompt: string): void
}

const SCOPES: { value: RewindScope; label: string; hint: string }[] = [
  { value: 'both', label: 'Files and conversation', hint: 'restore the files; continue in a fork before this prompt' },
  { value: 'files', label: 'Files only', hint: 'restore the files; the conversation goes on here' },
  { value: 'conversation', label: 'Conversation only', hint: 'continue in a fork before this prompt; files stay' },
]

const VERB: Record<RewindFileChange['status'], string> = { A: 'recreate', D: 'delete', M: 'restore', T: 'restore' }

type Preview = { state: 'loading' } | { state: 'ready'; info: RewindPreviewInfo } | { state: 'error'; message: string }

/**
 * The rewind card under a prompt: what to restore, the files that change and those the person changed since the
 * agent's last snapshot (the rewind refuses them unless the box that names them is ticked), then Rewind. Every
 * path and message is a text node.
 */
export function RewindCard({
  seq,
  prompt,
  actions,
  onClose,
}: {
  seq: number
  /** The prompt's text. */
  prompt: string
  actions: RewindActions
  onClose: () => void
}) {
  const [scope, setScope] = useState<RewindScope>('both')
  const [preview, setPreview] = useState<Preview>({ state: 'loading' })
  const [overwrite, setOverwrite] = useState(false)
  const [sending, setSending] = useState(false)
  const [failure, setFailure] = useState<string | null>(null)
  /** Answers to an older preview request (another scope, or the card closed) are dropped. */
  const request = useRef(0)

  const load = useCallback(() => {
    const id = ++request.current
    setPreview({ state: 'loading' })
    setOverwrite(false)
    actions.preview(seq, scope).then(
      (info) => id === request.current && setPreview({ state: 'ready', info }),
      (error: unknown) => id === request.current && setPreview({ state: 'error', message: messageOf(error) }),
    )
  }, [actions, seq, scope])

  useEffect(() => {
    load()
    return () => {
      request.current++
    }
  }, [load])

  const info = preview.state === 'ready' ? preview.info : undefined
  const conflicts = info?.files?.conflicts ?? []
  const ready = info !== undefined && (!conflicts.length || overwrite) && !sending

  const go = async () => {
    if (!info) return
    setSending(true)
    setFailure(null)
    try {
      actions.done(await actions.rewind(seq, scope, overwrite ? conflicts : []), prompt)
      onClose()
    } catch (error) {
      setFailure(messageOf(error))
      // The files moved since the list was made: show the list as it is now.
      load()
    } finally {
      setSending(false)
    }
  }

  return (
    <section className="rewind-card" aria-label="Rewind to this prompt" data-testid="rewind-card">
      <div className="rewind-head">Rewind to before this prompt{info ? ` (turn ${info.turn})` : ''}</div>
      <fieldset className="rewind-scopes">
        <legend className="visually-hidden">What to restore</legend>
        {SCOPES.map((option) => (
          <label key={option.value} className="rewind-scope" title={option.hint}>
            <input
              type="radio"
              name={`rewind-scope-${seq}`}
              value={option.value}
              data-testid={`rewind-scope-${option.value}`}
              checked={scope === option.value}
              onChange={() => {
                setFailure(null)
                setScope(option.value)
              }}
            />
            {option.label}
          </label>
        ))}
      </fieldset>
      {preview.state === 'loading' && <div className="rewind-note">Looking at the files…</div>}
      {preview.state === 'error' && (
        <div className="notice error" data-testid="rewind-error">
          {preview.message}
        </div>
      )}
      {info && <PreviewBody info={info} />}
      {conflicts.length > 0 && (
        <label className="rewind-overwrite">
          <input
            type="checkbox"
            data-testid="rewind-overwrite"
            checked={overwrite}
            onChange={(event) => setOverwrite(event.target.checked)}
          />
          Overwrite my changes to {conflicts.length === 1 ? 'this file' : `these ${conflicts.length} files`}
        </label>
      )}
      {failure && (
        <div className="notice error" role="alert" data-testid="rewind-failure">
          {failure}
        </div>
      )}
      <div className="rewind-actions">
        <button type="button" className="rewind-go" data-testid="rewind-go" disabled={!ready} onClick={() => void go()}>
          {sending ? 'Rewinding…' : 'Rewind'}
        </button>
        <button type="button" data-testid="rewind-cancel" disabled={sending} onClick={onClose}>
          Cancel
        </button>
      </div>
    </section>
  )
}

function PreviewBody({ info }: { info: RewindPreviewInfo }) {
  const files = info.files
  return (
    <div className="rewind-preview">
      {!files && <div className="rewind-note">The files stay as they are.</div>}
      {files && !files.changes.length && <div className="rewind-note">No files change.</div>}
      {files && files.changes.length > 0 && (
        <>
          <div className="rewind-note">Files that change ({files.changes.length}):</div>
          <ul className="rewind-files" data-testid="rewind-files">
            {files.changes.map((change) => (
              <li key={change.path} data-status={change.status}>
                <span className="rewind-verb">{VERB[change.status]}</span> {change.path}
              </li>
            ))}
          </ul>
        </>
      )}
      {files && files.conflicts.length > 0 && (
        <>
          <div className="rewind-note warn">
            Yours (changed since the agent&apos;s last snapshot, or ignored by git); the rewind would overwrite them:
          </div>
          <ul className="rewind-files conflicts" data-testid="rewind-conflicts">
            {files.conflicts.map((path) => (
              <li key={path}>{path}</li>
            ))}
          </ul>
        </>
      )}
      {files?.repositories && (
        <div className="rewind-note" data-testid="rewind-repositories">
          {files.repositories}
        </div>
      )}
      {info.fork && (
        <div className="rewind-note">
          The conversation continues in a new session (a fork); this one is kept as it is.
        </div>
      )}
    </div>
  )
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
