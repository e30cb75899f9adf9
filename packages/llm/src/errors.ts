import { flattenLine } from '@keel/session/text'
import { LlmError } from './types.ts'

// Error mapping shared by both SDK adapters (both SDKs raise the same shapes: a status, a body, a cause).

export interface FailureContext {
  provider: string
  keyVariable: string
  baseURL: string
  model?: string
  /** The URL the request went to, named when the provider rejects the request's shape. */
  endpoint?: string
}

export interface Failure {
  status?: number
  /** The provider's error type, when the body has one (`rate_limit_error`, `overloaded_error`, …). */
  type?: string | null
  message: string
  /** The request never got a response, or the connection broke. */
  connection?: boolean
  midStream?: boolean
  /** The response was not what the protocol says (unparseable SSE data). */
  malformed?: boolean
  /** The provider's error code, when the body has one (`invalid_api_key`, `context_length_exceeded`, …). */
  code?: string | null
  /** How long the server asked to wait (retries.ts `serverWaitMs`). */
  retryAfterMs?: number
}

/**
 * An error event inside a 200 stream has no status: what it says decides its class, so a revoked key or a request
 * the provider will never take is reported at once instead of retried.
 */
const AUTH_TEXT =
  /invalid[ _-]?(api[ _-]?)?key|incorrect api key|unauthori[sz]ed|authentication|api key (is )?(not valid|invalid|revoked|expired)/i
const REJECTED_TEXT =
  /invalid_request|context[ _-]length|maximum context|too many tokens|not supported|does not exist|model_not_found/i

/** One line, provider named: 401/403 → auth, 429 → rate-limit, 5xx → server, no connection → network, other 4xx → bad-request. */
export function providerError(where: FailureContext, failure: Failure): LlmError {
  const { provider } = where
  const status = failure.status
  const detail = flattenLine(failure.message, 300)
  const tag = status ? `${status}${detail ? `: ${detail}` : ''}` : detail
  const type = failure.type ?? ''
  const code = failure.code ?? ''
  const wait = failure.retryAfterMs
  if (failure.connection) {
    return failure.midStream
      ? new LlmError('network', `${provider}: connection lost mid-stream (${detail || 'socket closed'})`)
      : new LlmError('network', `${provider}: cannot reach ${where.baseURL} (${detail || 'connection failed'})`)
  }
  if (failure.malformed)
    return new LlmError('server', `${provider}: malformed response from ${where.baseURL} (${detail})`, status)
  const inStream = status === undefined
  if (
    status === 401 ||
    status === 403 ||
    type === 'authentication_error' ||
    type === 'permission_error' ||
    code === 'invalid_api_key' ||
    (inStream && AUTH_TEXT.test(`${type} ${code} ${failure.message}`))
  ) {
    return new LlmError('auth', `${provider} rejected the API key (${tag}); check ${where.keyVariable}`, status)
  }
  if (status === 429 || type === 'rate_limit_error' || code === 'rate_limit_exceeded')
    return new LlmError('rate-limit', `${provider}: rate limited (${tag})`, status, wait)
  if ((status !== undefined && status >= 500) || type === 'overloaded_error' || type === 'api_error')
    return new LlmError('server', `${provider}: server error (${tag})`, status, wait)
  if (inStream && (type === 'invalid_request_error' || REJECTED_TEXT.test(`${type} ${code} ${failure.message}`)))
    return new LlmError('bad-request', `${provider}: request rejected (${tag})`)
  // An error event inside a 200 stream has no status: the server failed while answering.
  if (status === undefined)
    return new LlmError('server', `${provider}: server error (${tag || 'error event in stream'})`)
  const what = where.model ? ` for ${where.model}${where.endpoint ? ` at ${where.endpoint}` : ''}` : ''
  return new LlmError('bad-request', `${provider}: request rejected${what} (${tag})`, status)
}

/** The innermost useful message of an error and its causes (`fetch failed` → `connect ECONNREFUSED …`). */
export function causeText(error: unknown): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current && depth < 5; depth++) {
    const message = (current as { message?: unknown }).message
    // A wrapper that repeats its cause's message adds nothing.
    if (
      typeof message === 'string' &&
      message &&
      message !== parts.at(-1) &&
      !/^(Connection error\.|fetch failed)$/.test(message)
    )
      parts.push(message)
    current = (current as { cause?: unknown }).cause
  }
  return parts.length ? parts.join(': ') : String((error as { message?: unknown })?.message ?? error)
}
