import type { ImageBlock, Message, Session, TextBlock } from '@keel/session'

/**
 * A tool result too large for what is left of the context window is cut in what the model sees, never on the log.
 * The decision is a `compaction/trim` event (so every later request, and a resumed session, cuts it the same way);
 * the cut keeps the head and the tail of the text, with a note in between.
 */

/** Text a trimmed result keeps at the least, so the model still sees how it starts and ends. */
export const MIN_KEPT_CHARS = 1_000

export function trimNote(cut: number, total: number): string {
  return `\n[… ${cut} of ${total} characters cut here: this tool result was larger than what was left of the context window. Ask for less at a time: a narrower command, a file read with offset/limit, grep …]\n`
}

/** Length of the note for a cut of about this size (the digits vary; this is what estimates count). */
export const TRIM_NOTE_CHARS = trimNote(10_000_000, 10_000_000).length

/** The result's content with its text cut to `kept` characters (60% head, 40% tail) around the note; images stay. */
export function trimContent(content: readonly (TextBlock | ImageBlock)[], kept: number): (TextBlock | ImageBlock)[] {
  const text = content.map((block) => (block.type === 'text' ? block.text : '')).join('')
  if (text.length <= kept) return [...content]
  const head = Math.ceil(kept * 0.6)
  const tail = kept - head
  const cut = `${text.slice(0, head)}${trimNote(text.length - kept, text.length)}${text.slice(text.length - tail)}`
  return [{ type: 'text', text: cut }, ...content.filter((block) => block.type !== 'text')]
}

interface Trims {
  seen: number
  kept: Map<string, number>
}
const bySession = new WeakMap<Session, Trims>()

/** callId → characters of text kept, from the session's `compaction/trim` events (read once each). */
export function trimsOf(session: Session): ReadonlyMap<string, number> {
  let trims = bySession.get(session)
  if (!trims) bySession.set(session, (trims = { seen: 0, kept: new Map() }))
  for (; trims.seen < session.seq; trims.seen++) {
    const event = session.at(trims.seen)!
    if (event.type === 'compaction/trim') trims.kept.set(event.data.callId, event.data.kept)
  }
  return trims.kept
}

/** Replaces the trimmed results in a request's messages with their cut copies. */
export function applyTrims(messages: Message[], trims: ReadonlyMap<string, number>): void {
  if (!trims.size) return
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!
    if (message.role !== 'tool' || !message.content.some((block) => trims.has(block.toolCallId))) continue
    messages[i] = {
      ...message,
      content: message.content.map((block) => {
        const kept = trims.get(block.toolCallId)
        return kept === undefined ? block : { ...block, content: trimContent(block.content, kept) }
      }),
    }
  }
}
