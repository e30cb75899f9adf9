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

/**
 * Calls the host. The access token travels in an HttpOnly cookie the host set when the printed URL was opened, so
 * this code never sees it; a reload or a new tab of the same origin sends it again.
 */
export class Api {
  async call<M extends RpcMethod>(method: M, params: RpcMethods[M]['params']): Promise<RpcMethods[M]['value']> {
    let response: Response
    try {
      response = await fetch(`api/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        credentials: 'same-origin',
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

  /** Opens the event stream; EventSource reconnects by itself, and each reconnection starts with a hello frame. */
  events(onFrame: (frame: ServerFrame) => void, onState: (state: StreamState) => void): () => void {
    const source = new EventSource('api/events')
    onState('connecting')
    source.onopen = () => onState('open')
    source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'down' : 'connecting')
    source.onmessage = (message) => {
      let frame: ServerFrame
      try {
        frame = JSON.parse(message.data)
      } catch {
        return
      }
      onFrame(frame)
    }
    return () => source.close()
  }
}
