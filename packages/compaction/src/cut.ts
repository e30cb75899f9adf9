import type { Message, Session, SessionEvent } from '@keel/session'
import { messageOf } from '@keel/session'

/**
 * The part of the surface a summary will stand in for: surface positions [from, to) and the seq range the replace
 * names. The run always ends where a turn's prompt begins, so every tool call in it has its result in it.
 */
export interface Cut {
  from: number
  to: number
  start: number
  end: number
  /** The surface node seqs in the run, to check it is still intact when a prepared summary is committed. */
  nodes: number[]
  messages: Message[]
}

/** True when the surface node at `seq` is the prompt that opened its turn (the first surface event after `turn/start`). */
function isTurnPrompt(session: Session, seq: number): boolean {
  const event = session.at(seq)
  if (event?.type !== 'user/message' || event.data.message.source === 'compaction') return false
  for (let i = seq - 1; i >= 0; i--) {
    const before = session.at(i)!
    if (before.type === 'turn/start') return true
    if ('surfaceOp' in before || before.type !== 'step/start') return false
  }
  return false
}

function isSummary(event: SessionEvent | undefined): boolean {
  return event?.type === 'user/message' && event.data.message.source === 'compaction'
}

/**
 * Where to cut so the last `keepTurns` turns (the open one counts) stay verbatim. The run is always a prefix of the
 * surface, so an earlier summary is folded into the new one and the surface holds at most one. Returns undefined
 * when there is nothing older to summarise.
 *
 * The replace range is the hull of what the run's nodes stand for (`session.surfaceSpans`): an earlier summary is
 * covered by the span of events it replaced, not by its own seq (which lies in the turn where it was made), so a
 * cut is possible on any turn, the one right after a compaction included.
 */
export function chooseCut(session: Session, keepTurns: number): Cut | undefined {
  const nodes = session.surfaceNodes
  const prompts: number[] = []
  for (let i = 0; i < nodes.length; i++) if (isTurnPrompt(session, nodes[i]!)) prompts.push(i)
  for (let k = prompts.length - keepTurns; k >= 0; k--) {
    const to = prompts[k]!
    if (to === 0) break
    const cut = runAt(session, nodes, 0, to)
    if (cut) return cut
  }
  return undefined
}

function runAt(session: Session, nodes: readonly number[], from: number, to: number): Cut | undefined {
  const spans = session.surfaceSpans
  let start = Infinity
  let end = -Infinity
  let fresh = false
  for (let i = from; i < to; i++) {
    const [lo, hi] = spans[i]!
    start = Math.min(start, lo)
    end = Math.max(end, hi)
    if (!isSummary(session.at(nodes[i]!))) fresh = true
  }
  // Nothing but an earlier summary: re-summarising it would only lose detail.
  if (!fresh) return undefined
  // The range must take in nothing outside the run: no node by its seq, no summary by any part of its span.
  for (let i = 0; i < nodes.length; i++) {
    if (i >= from && i < to) continue
    const [lo, hi] = spans[i]!
    if ((nodes[i]! >= start && nodes[i]! <= end) || (lo <= end && hi >= start)) return undefined
  }
  const messages: Message[] = []
  const calls = new Set<string>()
  for (let i = from; i < to; i++) {
    const message = messageOf(session.at(nodes[i]!)!)
    if (!message) continue
    messages.push(message)
    for (const block of message.content) {
      if (block.type === 'tool-call') calls.add(block.id)
      else if (block.type === 'tool-result') calls.delete(block.toolCallId)
    }
  }
  // A turn boundary always closes its calls; this guards against a log that says otherwise.
  if (calls.size) return undefined
  return { from, to, start, end, nodes: nodes.slice(from, to), messages }
}
