// The browser's side of the wire: JSON RPC over fetch and the server-sent event stream.
import type {
  HistoryPage,
  HistoryParams,
  RpcErrorCode,
  RpcMethod,
  RpcMethods,
  RpcResult,
  ServerFrame,
} from '../protocol.ts'
import { accessToken } from './token.ts'

export class ApiError extends Error {
  constructor(
    readonly code: RpcErrorCode | 'network',
    message: string,
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

export type StreamState = 'connecting' | 'open' | 'down'

/** Each request's headers: the tab's access token (token.ts), never a cookie. */
function authorized(headers: Record<string, string> = {}): Record<string, string> {
  const token = accessToken()
  return token ? { ...headers, 'x-keel-token': token } : headers
}

/** Waits between attempts to reopen a dropped event stream: quick at first, then every few seconds. */
const RECONNECT_MS = [250, 500, 1000, 2000, 4000]

/** Calls the host with the tab's token (token.ts) as `X-Keel-Token`; a reload of the tab keeps it. */
export class Api {
  async call<M extends RpcMethod>(method: M, params: RpcMethods[M]['params']): Promise<RpcMethods[M]['value']> {
    let response: Response
    try {
      response = await fetch(`api/${method}`, {
        method: 'POST',
        headers: authorized({ 'content-type': 'application/json' }),
        credentials: 'omit',
        body: JSON.stringify(params),
      })
    } catch {
      throw new ApiError('network', 'cannot reach keel serve (is it still running?)')
    }
    let result: RpcResult<RpcMethods[M]['value']>
    try {
      result = await response.json()
    } catch {
      throw new ApiError('network', `keel serve answered ${response.status} without JSON`)
    }
    if (!result.ok) throw new ApiError(result.error.code, result.error.message)
    return result.value
  }

  history(params: HistoryParams): Promise<HistoryPage> {
    return this.call('session.history', params)
  }

  /**
   * Opens the event stream over fetch (EventSource cannot send a header), reopening it after a drop; each opening
   * starts with a hello frame. `onUnauthorized` is told when the host refuses the token.
   */
  events(
    onFrame: (frame: ServerFrame) => void,
    onState: (state: StreamState) => void,
    onUnauthorized: () => void = () => {},
  ): () => void {
    const stop = new AbortController()
    void (async () => {
      for (let attempt = 0; !stop.signal.aborted; attempt++) {
        onState('connecting')
        try {
          const response = await fetch('api/events', {
            headers: authorized({ accept: 'text/event-stream' }),
            credentials: 'omit',
            cache: 'no-store',
            signal: stop.signal,
          })
          if (response.status === 401) {
            onState('down')
            onUnauthorized()
            return
          }
          if (!response.ok || !response.body) throw new Error(`status ${response.status}`)
          onState('open')
          attempt = 0
          await readEvents(response.body, onFrame)
        } catch {
          if (stop.signal.aborted) return
        }
        onState('connecting')
        await new Promise((done) => setTimeout(done, RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]))
      }
    })()
    return () => stop.abort()
  }
}

/** Reads server-sent events (`data:` lines up to a blank line) until the stream ends, one frame per event. */
async function readEvents(body: ReadableStream<Uint8Array>, onFrame: (frame: ServerFrame) => void): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true })
    let end = buffer.search(/\r?\n\r?\n/)
    while (end >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(buffer.slice(end).match(/^\r?\n\r?\n/)![0].length + end)
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n')
      if (data) {
        try {
          onFrame(JSON.parse(data))
        } catch {}
      }
      end = buffer.search(/\r?\n\r?\n/)
    }
  }
}
