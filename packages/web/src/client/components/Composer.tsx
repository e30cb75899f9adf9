import { useEffect, useState, type FormEvent, type KeyboardEvent } from 'react'

/**
 * Enter sends, Shift+Enter adds a line. While a turn runs the text still sends, into the agent's queue: Enter (or
 * "Send now") steers the running turn, "After this turn" makes it the next turn; Stop cancels the turn.
 */
export function Composer({
  running,
  disabled,
  onSend,
  onCancel,
  draft,
}: {
  running: boolean
  disabled: boolean
  onSend: (text: string, kind?: 'steer' | 'follow-up') => Promise<boolean>
  onCancel: () => void
  /** Text put into the editor from outside (the prompt a rewind went back before); each new object replaces it. */
  draft?: { text: string } | null
}) {
  const [text, setText] = useState('')
  useEffect(() => {
    if (draft) setText(draft.text)
  }, [draft])
  const [sending, setSending] = useState(false)

  const send = async (kind: 'steer' | 'follow-up' = 'steer') => {
    if (!text.trim() || sending || disabled) return
    setSending(true)
    try {
      if (await onSend(text, kind)) setText('')
    } finally {
      setSending(false)
    }
  }
  const onSubmit = (event: FormEvent) => {
    event.preventDefault()
    if (running) onCancel()
    else void send()
  }
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault()
      void send()
    }
  }
  return (
    <form className="composer" onSubmit={onSubmit}>
      <textarea
        data-testid="composer-input"
        value={text}
        placeholder={running ? 'Keel is working… Enter steers it; or send it after this turn' : 'Message Keel'}
        rows={3}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
        disabled={disabled}
      />
      {running && (
        <>
          <button
            type="button"
            data-testid="steer"
            className="send"
            disabled={disabled || sending || !text.trim()}
            onClick={() => void send('steer')}
          >
            Send now
          </button>
          <button
            type="button"
            data-testid="follow-up"
            className="send secondary"
            disabled={disabled || sending || !text.trim()}
            onClick={() => void send('follow-up')}
          >
            After this turn
          </button>
        </>
      )}
      <button
        type="submit"
        data-testid={running ? 'cancel' : 'send'}
        className={running ? 'stop' : 'send'}
        disabled={disabled || (!running && (sending || !text.trim()))}
      >
        {running ? 'Stop' : 'Send'}
      </button>
    </form>
  )
}
