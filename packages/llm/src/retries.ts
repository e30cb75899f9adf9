import { ScriptedAdapter } from './scripted.ts'
import { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from './types.ts'
import type { RetryNotice } from './retry-text.ts'
import { sleep } from './sleep.ts'

export { type RetryNotice, retryText } from './retry-text.ts'

export interface RetryPolicy {
  attempts: number
  baseDelayMs: number
  /** Longest single wait, whatever the server asks for (default 60 s). */
  maxWaitMs?: number
  /** Longest total of all waits for one request (default 10 min): past it the failure is reported. */
  maxTotalWaitMs?: number
}

export const DEFAULT_MAX_WAIT_MS = 60_000
export const DEFAULT_MAX_TOTAL_WAIT_MS = 600_000

/**
 * How long the server asks a client to wait, from the headers of its error response, in ms; undefined when it says
 * nothing. `retry-after-ms` (OpenAI, Anthropic), `retry-after` as seconds or an HTTP date (RFC 9110 §10.2.3), then
 * the providers' reset headers: Anthropic's `anthropic-ratelimit-*-reset` (an RFC 3339 time,
 * https://docs.anthropic.com/en/api/rate-limits#response-headers) and OpenAI's `x-ratelimit-reset-*` (a duration
 * such as `6m0s` or `1.5s`, https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers).
 */
export function serverWaitMs(
  header: (name: string) => string | null | undefined,
  now = Date.now(),
): number | undefined {
  const ms = Number(header('retry-after-ms'))
  if (header('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms
  const after = header('retry-after')?.trim()
  if (after) {
    if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1000
    const date = Date.parse(after)
    if (Number.isFinite(date)) return Math.max(0, date - now)
  }
  const resets: number[] = []
  for (const name of ['requests', 'tokens', 'input-tokens', 'output-tokens']) {
    const at = header(`anthropic-ratelimit-${name}-reset`)
    const date = at ? Date.parse(at) : Number.NaN
    if (Number.isFinite(date)) resets.push(Math.max(0, date - now))
    const span = header(`x-ratelimit-reset-${name}`)
    const duration = span ? durationMs(span) : undefined
    if (duration !== undefined) resets.push(duration)
  }
  // Only a limit that ran out needs its reset; the longest of them is when every one is free again.
  return resets.length ? Math.max(...resets) : undefined
}

/** `6m0s`, `1.5s`, `120ms`, `1h2m` → ms. */
function durationMs(text: string): number | undefined {
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)]
  if (!parts.length || parts.map((part) => part[0]).join('') !== text.trim()) return undefined
  const unit = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * unit[u as keyof typeof unit], 0)
}

/**
 * `adapter` with bounded retries for rate limits, server errors (5xx, Anthropic's `overloaded_error`) and dropped
 * connections, only before any output arrived (so nothing is duplicated). Each wait is what the server asked for,
 * else exponential backoff with full jitter, capped per wait and in total; `notify` hears of each wait before it
 * starts. Apart from the service, so a first request can be sent before cordis boots.
 */
export function withRetries(
  adapter: LlmAdapter,
  policy: RetryPolicy,
  notify?: (notice: RetryNotice, request: LlmRequest) => void,
): LlmAdapter {
  if (adapter instanceof ScriptedAdapter) return adapter
  const maxWait = policy.maxWaitMs ?? DEFAULT_MAX_WAIT_MS
  const maxTotal = policy.maxTotalWaitMs ?? DEFAULT_MAX_TOTAL_WAIT_MS
  return {
    provider: adapter.provider,
    model: adapter.model,
    contextWindow: adapter.contextWindow,
    price: adapter.price,
    vision: adapter.vision,
    async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
      let waited = 0
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
          const backoff = policy.baseDelayMs * 2 ** (attempt - 1)
          const wait = Math.min(maxWait, failure.retryAfterMs ?? Math.round(backoff / 2 + Math.random() * backoff))
          const giveUp =
            signal.aborted ||
            started ||
            !failure.retryable ||
            attempt >= policy.attempts ||
            (waited > 0 && waited + wait > maxTotal)
          if (giveUp) {
            if (failure.retryable && attempt > 1) failure.message += ` (after ${attempt} attempts)`
            throw failure
          }
          const notice: RetryNotice = {
            provider: adapter.provider,
            kind: failure.kind as RetryNotice['kind'],
            attempt: attempt + 1,
            attempts: policy.attempts,
            waitMs: Math.min(wait, maxTotal - waited),
            message: failure.message,
          }
          try {
            notify?.(notice, request)
          } catch {
            // A listener that throws must not turn a retry into a failure.
          }
          await sleep(notice.waitMs, signal)
          waited += notice.waitMs
        }
      }
    },
  }
}
