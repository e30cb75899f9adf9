// One call's time limit and the caller's cancel, as one signal. Every file tool runs under it, so nothing the model
// asks for (a huge tree, a huge file, a regex that backtracks forever) keeps a turn or Ctrl+C waiting.

export class CallLimit {
  readonly signal: AbortSignal
  private readonly controller = new AbortController()
  private readonly timer: NodeJS.Timeout
  private readonly onAbort = () => this.controller.abort(new Error(`${this.tool} aborted`))
  timedOut = false

  constructor(
    private readonly tool: string,
    private readonly parent: AbortSignal,
    private readonly timeoutMs: number,
  ) {
    this.signal = this.controller.signal
    this.timer = setTimeout(() => {
      this.timedOut = true
      this.controller.abort(new Error(this.timeoutMessage()))
    }, timeoutMs)
    if (parent.aborted) this.onAbort()
    else parent.addEventListener('abort', this.onAbort, { once: true })
  }

  private timeoutMessage(): string {
    const after = this.timeoutMs < 1000 ? `${this.timeoutMs} ms` : `${Math.round(this.timeoutMs / 100) / 10} s`
    const why =
      this.tool === 'grep'
        ? 'the pattern may backtrack catastrophically (nested quantifiers such as (a+)+), or the search is too wide; simplify the pattern or narrow path and glob'
        : this.tool === 'read'
          ? 'read a smaller part of the file with offset and limit'
          : 'narrow the path or pattern'
    return `${this.tool} ran out of time: stopped after ${after} (config timeoutMs); ${why}`
  }

  /** Throws the reason (aborted, or out of time) once the call should stop. */
  check(): void {
    if (this.signal.aborted) throw this.signal.reason as Error
  }

  /** Settles with `promise`, or rejects as soon as the call should stop (the work itself may run on unobserved). */
  race<T>(promise: Promise<T>): Promise<T> {
    // Whatever the work ends with after the call has stopped is nobody's business: never an unhandled rejection.
    promise.catch(() => undefined)
    if (this.signal.aborted) return Promise.reject(this.signal.reason as Error)
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(this.signal.reason as Error)
      this.signal.addEventListener('abort', stop, { once: true })
      promise.then(resolve, reject).finally(() => this.signal.removeEventListener('abort', stop))
    })
  }

  dispose(): void {
    clearTimeout(this.timer)
    this.parent.removeEventListener('abort', this.onAbort)
  }
}

/** Runs `work` under a fresh CallLimit and always releases it. */
export async function limited<T>(
  tool: string,
  parent: AbortSignal,
  timeoutMs: number,
  work: (limit: CallLimit) => Promise<T>,
): Promise<T> {
  const limit = new CallLimit(tool, parent, timeoutMs)
  try {
    return await limit.race(work(limit))
  } finally {
    limit.dispose()
  }
}

/** Lets timers and I/O run between slices of synchronous work over many items. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Synchronous work between two turns of the loop. */
const SLICE_MS = 8

/** Runs a synchronous step per item, yielding to the loop (and checking the signal) every few milliseconds. */
export class Slicer {
  private started = performance.now()
  constructor(private readonly signal: AbortSignal) {}

  async tick(): Promise<void> {
    if (performance.now() - this.started < SLICE_MS) return
    await yieldToLoop()
    if (this.signal.aborted) throw this.signal.reason
    this.started = performance.now()
  }
}
