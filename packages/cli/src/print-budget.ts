// --max-budget-usd: what the run has cost so far, in US dollars, from the tokens its model requests reported.
import type { TokenUsage } from '@keel/session'

/**
 * The cost of these requests on `model` (`<provider>/<model>`), or undefined when no price is known for it.
 * No prices are known yet: the model catalog with per-token prices is another change, and this is the one place to
 * connect it. Until then a budget is parsed, checked and reported, but never reached (print.ts says so on stderr).
 */
export function costOfRunSoFar(model: string, usages: readonly TokenUsage[]): number | undefined {
  void model
  void usages
  return undefined
}
