import {
  useEffect,
  useRef,
  useState,
  type ClipboardEvent,
  type DragEvent,
  type FormEvent,
  type KeyboardEvent,
} from 'react'
import { imageBytes, imageFromBase64, imageLabel } from '@keel/session/image'
import type { CommandInfo, PromptImage } from '../../protocol.ts'

/** The command files whose name starts with what follows a leading `/` (before any space), at most 12. */
function matching(commands: readonly CommandInfo[], text: string): CommandInfo[] {
  const typed = /^\/([\w.:-]*)$/.exec(text)
  if (!typed) return []
  return commands.filter((command) => command.name.startsWith(typed[1]!)).slice(0, 12)
}

/** A picked, pasted or dropped file as a prompt image, checked by the rule the host applies again. */
async function readImage(file: File): Promise<PromptImage | { error: string }> {
  const bytes = new Uint8Array(await file.arrayBuffer())
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  const block = imageFromBase64(file.name || 'pasted image', btoa(binary))
  if ('error' in block) return block
  return { name: file.name || 'pasted image', data: block.data }
}

/**
 * Enter sends, Shift+Enter adds a line. While a turn runs the text still sends, into the agent's queue: Enter (or
 * "Send now") steers the running turn, "After this turn" makes it the next turn; Stop cancels the turn. Images:
 * paste, drop, or pick.
 */
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
  onSend: (text: string, images: PromptImage[], kind?: 'steer' | 'follow-up') => Promise<boolean>
  onCancel: () => void
  /**
   * Text put into the editor from outside (the prompt a rewind went back before); each new object replaces it, or
   * with `before` goes before what is typed there (a queued prompt taken back, as the TUI's Alt+Up does).
   */
  draft?: { text: string; before?: boolean } | null
  /** The slash command files, offered after a leading `/` (Tab or a click completes one). */
  commands?: readonly CommandInfo[]
}) {
  const [text, setText] = useState('')
  const [images, setImages] = useState<PromptImage[]>([])
  const [refused, setRefused] = useState<string | null>(null)
  const picker = useRef<HTMLInputElement>(null)
  useEffect(() => {
    if (draft) setText((typed) => (draft.before && typed ? `${draft.text}\n${typed}` : draft.text))
  }, [draft])
  const [sending, setSending] = useState(false)

  const attach = async (files: readonly File[]) => {
    setRefused(null)
    for (const file of files) {
      const image = await readImage(file)
      if ('error' in image) setRefused(image.error)
      else setImages((list) => [...list, image])
    }
  }
  const send = async (kind: 'steer' | 'follow-up' = 'steer') => {
    if ((!text.trim() && !images.length) || sending || disabled) return
    setSending(true)
    try {
      if (await onSend(text, images, kind)) {
        setText('')
        setImages([])
        setRefused(null)
      }
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
  const onPaste = (event: ClipboardEvent<HTMLTextAreaElement>) => {
    const files = [...event.clipboardData.files]
    if (!files.length) return
    event.preventDefault()
    void attach(files)
  }
  const onDrop = (event: DragEvent<HTMLFormElement>) => {
    const files = [...event.dataTransfer.files]
    if (!files.length) return
    event.preventDefault()
    void attach(files)
  }
  return (
    <form className="composer" onSubmit={onSubmit} onDragOver={(event) => event.preventDefault()} onDrop={onDrop}>
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
      {images.length || refused ? (
        <div className="attachments">
          {images.map((image, i) => (
            <button
              key={i}
              type="button"
              className="attachment"
              data-testid="attachment"
              title="Remove"
              onClick={() => setImages((list) => list.filter((_, j) => j !== i))}
            >
              {imageLabel({ name: image.name, mediaType: '', bytes: imageBytes(image) })} ×
            </button>
          ))}
          {refused ? (
            <span className="attachment-refused" data-testid="attachment-refused">
              {refused}
            </span>
          ) : null}
        </div>
      ) : null}
      <textarea
        data-testid="composer-input"
        value={text}
        placeholder={running ? 'Keel is working… Enter steers it; or send it after this turn' : 'Message Keel'}
        rows={3}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
        onPaste={onPaste}
        disabled={disabled}
      />
      <input
        ref={picker}
        type="file"
        accept="image/png,image/jpeg,image/gif,image/webp"
        multiple
        hidden
        data-testid="image-picker"
        onChange={(event) => {
          void attach([...(event.target.files ?? [])])
          event.target.value = ''
        }}
      />
      <button
        type="button"
        className="attach"
        data-testid="attach"
        title="Attach an image"
        disabled={disabled}
        onClick={() => picker.current?.click()}
      >
        Image
      </button>
      {running && (
        <>
          <button
            type="button"
            data-testid="steer"
            className="send"
            disabled={disabled || sending || (!text.trim() && !images.length)}
            onClick={() => void send('steer')}
          >
            Send now
          </button>
          <button
            type="button"
            data-testid="follow-up"
            className="send secondary"
            disabled={disabled || sending || (!text.trim() && !images.length)}
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
        disabled={disabled || (!running && (sending || (!text.trim() && !images.length)))}
      >
        {running ? 'Stop' : 'Send'}
      </button>
    </form>
  )
}
