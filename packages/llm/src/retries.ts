import { ScriptedAdapter } from './scripted.ts'
import { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from './types.ts'

export interface RetryPolicy {
  attempts: number
  baseDelayMs: number
}

/**
 * `adapter` with bounded retries for rate limits, server errors and dropped connections, only before any output
 * arrived (so nothing is duplicated). Apart from the service, so a first request can be sent before cordis boots.
 */
export function withRetries(adapter: LlmAdapter, policy: RetryPolicy): LlmAdapter {
  if (adapter instanceof ScriptedAdapter) return adapter
  return {
    provider: adapter.provider,
    model: adapter.model,
    contextWindow: adapter.contextWindow,
    async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
      for (let attempt = 1; ; attempt++) {
        let started = false
        try {
          for await (const chunk of adapter.stream(request, signal)) {
            started = true
            yield chunk
          }
          return
        } catch (error) {
          const failure =
            error instanceof LlmError
              ? error
              : new LlmError(signal.aborted ? 'aborted' : 'network', (error as Error)?.message ?? String(error))
          if (signal.aborted || started || !failure.retryable || attempt >= policy.attempts) {
            if (failure.retryable && attempt > 1) failure.message += ` (after ${attempt} attempts)`
            throw failure
          }
          await new Promise((done) => setTimeout(done, policy.baseDelayMs * 2 ** (attempt - 1)))
        }
      }
    },
  }
}
