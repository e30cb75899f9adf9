import { LlmError } from './types.ts'

/** A wait that ends early, with `aborted`, the moment `signal` fires (Esc, session/cancel, a signal). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done, fail) => {
    if (signal.aborted) return fail(new LlmError('aborted', 'request aborted'))
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      done()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      fail(new LlmError('aborted', 'request aborted'))
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
