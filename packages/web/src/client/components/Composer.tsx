import { useEffect, useState, type FormEvent, type KeyboardEvent } from 'react'

/** Enter sends, Shift+Enter adds a line; while a turn runs the button cancels it. */
export function Composer({
  running,
  disabled,
  onSend,
  onCancel,
  draft,
}: {
  running: boolean
  disabled: boolean
  onSend: (text: string) => Promise<boolean>
  onCancel: () => void
  /** Text put into the editor from outside (the prompt a rewind went back before); each new object replaces it. */
  draft?: { text: string } | null
}) {
  const [text, setText] = useState('')
  useEffect(() => {
    if (draft) setText(draft.text)
  }, [draft])
  const [sending, setSending] = useState(false)

  const send = async () => {
    if (!text.trim() || running || sending || disabled) return
    setSending(true)
    try {
      if (await onSend(text)) setText('')
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
        placeholder={running ? 'Keel is working… (you can type the next message)' : 'Message Keel'}
        rows={3}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
        disabled={disabled}
      />
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
