import { useEffect, useState, type FormEvent, type KeyboardEvent } from 'react'
import type { CommandInfo } from '../../protocol.ts'

/** The command files whose name starts with what follows a leading `/` (before any space), at most 12. */
function matching(commands: readonly CommandInfo[], text: string): CommandInfo[] {
  const typed = /^\/([\w.:-]*)$/.exec(text)
  if (!typed) return []
  return commands.filter((command) => command.name.startsWith(typed[1]!)).slice(0, 12)
}

/** Enter sends, Shift+Enter adds a line; while a turn runs the button cancels it. */
export function Composer({
  running,
  disabled,
  onSend,
  onCancel,
  draft,
  commands = [],
}: {
  running: boolean
  disabled: boolean
  onSend: (text: string) => Promise<boolean>
  onCancel: () => void
  /** Text put into the editor from outside (the prompt a rewind went back before); each new object replaces it. */
  draft?: { text: string } | null
  /** The slash command files, offered after a leading `/` (Tab or a click completes one). */
  commands?: readonly CommandInfo[]
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
  const offered = matching(commands, text)
  const complete = (command: CommandInfo) => setText(`/${command.name} `)
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Tab' && offered.length) {
      event.preventDefault()
      complete(offered[0]!)
      return
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault()
      void send()
    }
  }
  return (
    <form className="composer" onSubmit={onSubmit}>
      {offered.length > 0 && (
        <ul className="command-menu" data-testid="command-menu">
          {offered.map((command) => (
            <li key={command.name}>
              <button type="button" data-testid="command-item" onClick={() => complete(command)}>
                <span className="command-name">/{command.name}</span>
                {command.argumentHint && <span className="command-hint"> {command.argumentHint}</span>}
                <span className="command-description">{command.description}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
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
