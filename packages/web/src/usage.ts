// Token figures for the page header, from the usage providers report on `assistant/message` events.
import { backscan, type SessionEvent } from '@keel/session'
import type { UsageSummary } from './protocol.ts'

/** Adds one event to a summary; events without reported usage leave it as it is. */
export function addUsage(summary: UsageSummary, event: SessionEvent): UsageSummary {
  if (event.type !== 'assistant/message' || !event.data.usage) return summary
  const { input, output } = event.data.usage
  // A provider's `input` already counts cached tokens, so input + output is what the next request starts from.
  return { total: summary.total + input + output, context: input + output }
}

export const NO_USAGE: UsageSummary = { total: 0 }

/** The summary over a log held in memory. */
export function usageOfEvents(events: readonly SessionEvent[]): UsageSummary {
  let summary = NO_USAGE
  for (const event of events) summary = addUsage(summary, event)
  return summary
}

/**
 * The summary over a session file up to `asOfSeq`. Unlike a page this reads the whole file (once per opening of a
 * session that is not open here, as resuming it would).
 */
export function usageOfFile(path: string, asOfSeq: number): UsageSummary {
  let total = 0
  let context: number | undefined
  backscan(path, (event) => {
    if (event.seq > asOfSeq || event.type !== 'assistant/message' || !event.data.usage) return undefined
    const { input, output } = event.data.usage
    total += input + output
    context ??= input + output
    return undefined
  })
  return context === undefined ? { total } : { total, context }
}
