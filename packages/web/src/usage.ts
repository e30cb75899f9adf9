// Token figures for the page header, from the usage providers report on `assistant/message` events.
import type { SessionEvent } from '@keel/session'
import { sessionCost } from '@keel/session/cost'
import { type LogTail, scanTail } from './history.ts'
import type { UsageSummary } from './protocol.ts'

/** Adds one event to a summary; events without reported usage leave it as it is. */
function addUsage(summary: UsageSummary, event: SessionEvent): UsageSummary {
  if (event.type !== 'assistant/message' || !event.data.usage) return summary
  const { input, output } = event.data.usage
  // A provider's `input` already counts cached tokens, so input + output is what the next request starts from.
  return { total: (summary.total ?? 0) + input + output, context: input + output }
}

const NO_USAGE: UsageSummary = { total: 0 }

/** The summary over a log held in memory. */
export function usageOfEvents(events: readonly SessionEvent[]): UsageSummary {
  let summary = NO_USAGE
  for (const event of events) summary = addUsage(summary, event)
  return { ...summary, cost: sessionCost(events).total }
}

/**
 * What a session file's tail tells cheaply: the context as of the latest reply at or before `asOfSeq`, read backwards
 * and stopping at that reply (as pages do). The session's total would mean parsing the whole log, so it is left out;
 * the total returns once the session is open in this process.
 */
export function usageOfFile(tail: LogTail, asOfSeq: number): UsageSummary {
  const found = scanTail(tail, (event) => {
    if (event.seq > asOfSeq || event.type !== 'assistant/message') return undefined
    return { usage: event.data.usage }
  })
  const usage = found.value?.usage
  return usage ? { context: usage.input + usage.output } : {}
}
