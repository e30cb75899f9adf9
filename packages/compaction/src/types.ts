import type { Agent } from '@keel/agent'
import type { TokenUsage } from '@keel/session/messages'

export type CompactionReason = 'auto' | 'manual'

/**
 * What one compaction did. Token figures are estimates (see estimate.ts). `applied` is `now` when the summary
 * replaced history in this call, `next-request` when a manual compaction made while the agent was idle is
 * waiting to be committed at the start of the next model request (log events need an open turn).
 */
export interface CompactionOutcome {
  ok: boolean
  reason: CompactionReason
  before: number
  after: number
  /** Surface messages the summary stands in for. */
  summarised: number
  applied?: 'now' | 'next-request'
  /** One line, when `ok` is false. */
  error?: string
}

export interface CompactOptions {
  /** Aborts the summary request (or a compaction still waiting for the next request). */
  signal?: AbortSignal
}

declare module '@keel/session' {
  interface SessionEventMap {
    /** A compaction began in the open turn; `before` is the estimated context size in tokens. */
    'compaction/start': { turn: number; reason: CompactionReason; before: number }
    /**
     * The compaction finished. On success the summary `user/message` (with `surfaceOp.op === 'replace'`) sits just
     * before this event; on failure `error` says why and nothing on the surface changed.
     */
    /** `usage` and `costUsd`: the summary request, priced like a step (see @keel/session/cost). */
    'compaction/end': {
      turn: number
      before: number
      after: number
      summarised: number
      error?: string
      usage?: TokenUsage
      costUsd?: number
    }
    /**
     * A tool result too large for what was left of the context window is cut, from this request on, in what the
     * model is sent: its text keeps `kept` of its `chars` characters (head and tail, with a note). The log keeps the
     * result whole.
     */
    'compaction/trim': { turn: number; callId: string; chars: number; kept: number }
  }
}

declare module 'cordis' {
  interface Events {
    /**
     * A summary request began (auto at a request boundary, or manual). Live only; the log records
     * `compaction/start` when the compaction is committed inside a turn.
     * @mode emit
     */
    'compaction/running'(agent: Agent, info: { reason: CompactionReason; before: number }): void
    /**
     * A compaction attempt ended, successfully or not. Live only; fires for an idle manual compaction as soon as the
     * summary is ready, before it is committed to the log at the next request.
     * @mode emit
     */
    'compaction/done'(agent: Agent, outcome: CompactionOutcome): void
  }
}
