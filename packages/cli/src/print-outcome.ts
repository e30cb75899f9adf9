// How a print run ends: its `reason` (in the JSON and the stream-json `result` line) and its exit code. The table
// is the contract the README documents; a script can branch on either.
import type { TurnEndReason } from '@keel/session'

/** The turn's own end reasons, and the ones a headless run adds: its limits and an answer that fails the schema. */
export type PrintReason = TurnEndReason | 'max-turns' | 'timeout' | 'budget' | 'invalid-output'

export const EXIT_CODES: Record<PrintReason, number> = {
  completed: 0,
  'max-tokens': 0,
  error: 1,
  interrupted: 1,
  'invalid-output': 4,
  // Out of model requests, by --max-turns or by the agent's own maxSteps: a looping model is not a success.
  'max-turns': 5,
  'step-limit': 5,
  budget: 6,
  timeout: 124,
  aborted: 130,
}

/** A completed run that had a call refused, under --fail-on-denial (or `print.failOnDenial`). */
export const DENIAL_EXIT_CODE = 3

/** The line on stderr for a run that did not simply complete. */
export function endLine(reason: PrintReason, detail: { message?: string; limit?: string }): string | undefined {
  switch (reason) {
    case 'error':
      return `the turn ended with an error: ${detail.message ?? 'unknown error'}`
    case 'step-limit':
      return 'the turn hit the step limit (agent.maxSteps) and stopped'
    case 'max-turns':
      return `the turn used its ${detail.limit === '1' ? '1 model request' : `${detail.limit} model requests`} (--max-turns) and stopped`
    case 'timeout':
      return `the run reached its time limit (--timeout ${detail.limit}); the turn was cancelled`
    case 'budget':
      return `the run reached its budget (--max-budget-usd ${detail.limit}); the turn was cancelled`
    case 'invalid-output':
      return `the answer does not match --output-schema ${detail.limit}: ${detail.message}`
    default:
      return undefined
  }
}
