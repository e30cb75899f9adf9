// --max-budget-usd: what the run has cost so far, in US dollars. Every model reply and compaction summary is priced
// on the log as it is written (`costUsd`, from the catalog's price for the model: @keel/session/cost), in the print
// session and in its subagents' sessions alike; this adds them up as they arrive.
import type { SessionEvent } from '@keel/session'
import type {} from '@keel/compaction' // the compaction/end event

export class RunCost {
  private usd = 0
  private priced = false

  /** Counts a reply or a summary that carries its dollars; every other event is passed over. */
  observe(event: SessionEvent): void {
    if (event.type !== 'assistant/message' && event.type !== 'compaction/end') return
    const cost = (event.data as { costUsd?: unknown }).costUsd
    if (typeof cost !== 'number' || !Number.isFinite(cost)) return
    this.usd += cost
    this.priced = true
  }

  /** Dollars so far, or undefined while no request had a known price. */
  get total(): number | undefined {
    return this.priced ? this.usd : undefined
  }
}
