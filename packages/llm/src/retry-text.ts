// The wording of a retry wait, in one place every door imports (the web client too: nothing of node: here).

/** What a waiting request tells the person: shown on stderr, the status line and the log. */
export interface RetryNotice {
  provider: string
  kind: 'rate-limit' | 'server' | 'network'
  /** The attempt about to be made (2 for the first retry) and the most there will be. */
  attempt: number
  attempts: number
  waitMs: number
  /** The failure's one-line message. */
  message: string
}

/** `rate limited by anthropic, retrying in 7 s (2/6)`. */
export function retryText(notice: RetryNotice): string {
  const why =
    notice.kind === 'rate-limit'
      ? `rate limited by ${notice.provider}`
      : notice.kind === 'server'
        ? `${notice.provider} server error`
        : `cannot reach ${notice.provider}`
  return `${why}, retrying in ${Math.max(1, Math.round(notice.waitMs / 1000))} s (${notice.attempt}/${notice.attempts})`
}
