import type { RetryNotice } from '@keel/llm'

declare module '@keel/session' {
  interface SessionEventMap {
    /**
     * The step's model request failed (a rate limit, a server error, a dropped connection) and is sent again after
     * `waitMs`; doors show `retryText` of it until the step's reply or the turn's end. Cancelling ends the wait.
     */
    'model/retry': { turn: number; step: number } & RetryNotice
  }
}
