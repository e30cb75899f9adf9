import { LlmError } from './types.ts'

/** How long a stream may stay silent (no response headers, then no event) before it counts as dropped. */
export const DEFAULT_IDLE_TIMEOUT_MS = 90_000

/**
 * Bounds every wait of one streamed request: for the response headers, then for each next event. The SDK timeouts
 * cover only the headers, so a server that goes quiet mid-stream would otherwise hold the turn forever. A stall
 * aborts the request (closing the socket) and fails as a `network` error, so `withRetries` treats it like a dropped
 * connection. The caller's signal ends a wait at once, even while the SDK is blocked on a silent socket.
 */
export class IdleWatch {
  /** Pass this to the SDK: it fires on the caller's abort and on a stall. */
  readonly signal: AbortSignal
  private readonly stalled = new AbortController()

  constructor(
    private readonly caller: AbortSignal,
    private readonly idleMs: number,
    private readonly provider: string,
  ) {
    this.signal = AbortSignal.any([caller, this.stalled.signal])
  }

  async wait<T>(pending: Promise<T>, started: boolean): Promise<T> {
    if (this.caller.aborted) {
      pending.catch(() => {}) // the SDK rejects it too; that rejection is not news
      throw new LlmError('aborted', 'request aborted')
    }
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    const gate = new Promise<never>((_, fail) => {
      timer = setTimeout(() => {
        this.stalled.abort()
        fail(
          new LlmError(
            'network',
            `${this.provider}: ${started ? 'the stream stalled' : 'no response'} (nothing received for ${seconds(this.idleMs)}; idleTimeoutMs)`,
          ),
        )
      }, this.idleMs)
      onAbort = () => fail(new LlmError('aborted', 'request aborted'))
      this.caller.addEventListener('abort', onAbort, { once: true })
    })
    try {
      return await Promise.race([pending, gate])
    } finally {
      clearTimeout(timer)
      this.caller.removeEventListener('abort', onAbort!)
    }
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(ms < 1000 ? 2 : 1)} s`
}
