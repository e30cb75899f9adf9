/**
 * A counting semaphore whose waiters leave the queue when their signal aborts, so a cancelled turn never starts
 * a queued child.
 */
export class Slots {
  private used = 0
  private readonly waiting: { grant: () => void }[] = []

  constructor(readonly size: number) {}

  get running(): number {
    return this.used
  }
  get queued(): number {
    return this.waiting.length
  }

  /** Resolves with a release function once a slot is free; rejects if `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new Error('cancelled'))
    if (this.used < this.size) {
      this.used++
      return Promise.resolve(this.releaser())
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          this.used++
          resolve(this.releaser())
        },
      }
      const onAbort = () => {
        const index = this.waiting.indexOf(waiter)
        if (index >= 0) this.waiting.splice(index, 1)
        reject(new Error('cancelled'))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(waiter)
    })
  }

  private releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      this.used--
      this.waiting.shift()?.grant()
    }
  }
}
