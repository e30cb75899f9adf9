// What a print run answered: the final answer (the text of the turn's last step, when that step ended the turn by
// asking for no tools) and the transcript (every assistant text of the run, in order), read from the log.
import type { SessionEvent } from '@keel/session'

export type AssistantEvent = Extract<SessionEvent, { type: 'assistant/message' }>

/** The text blocks of one step's message, joined. */
export function assistantText(event: AssistantEvent): string {
  return event.data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

/** Whether the step asked for tools, so its text was said on the way rather than as the answer. */
export function isInterim(event: AssistantEvent): boolean {
  return event.data.message.content.some((block) => block.type === 'tool-call')
}

/** The assistant text of `turn`'s last step; empty when that step asked for tools (the turn was cut short). */
export function finalAnswer(events: readonly SessionEvent[], turn: number): string {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type !== 'assistant/message' || event.data.turn !== turn) continue
    return isInterim(event) ? '' : assistantText(event)
  }
  return ''
}

/** Every non-empty assistant text of these turns, in order. */
export function transcriptOf(events: readonly SessionEvent[], turns: readonly number[]): string[] {
  const out: string[] = []
  for (const event of events) {
    if (event.type !== 'assistant/message' || !turns.includes(event.data.turn)) continue
    const text = assistantText(event)
    if (text) out.push(text)
  }
  return out
}
