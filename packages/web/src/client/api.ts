// The browser's side of the wire: JSON RPC over fetch and the server-sent event stream.
import type { HistoryPage, HistoryParams, RpcErrorCode, RpcMethod, RpcMethods, RpcResult, ServerFrame } from '../protocol.ts'

export class ApiError extends Error {
  constructor(readonly code: RpcErrorCode | 'network', message: string) {
    super(message)
    this.name = 'ApiError'
  }
}

export type StreamState = 'connecting' | 'open' | 'down'

export class Api {
  constructor(private readonly token: string) {}

  async call<M extends RpcMethod>(method: M, params: RpcMethods[M]['params']): Promise<RpcMethods[M]['value']> {
    let response: Response
    try {
      response = await fetch(`api/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
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
    const source = new EventSource(`api/events?token=${encodeURIComponent(this.token)}`)
    onState('connecting')
    source.onopen = () => onState('open')
    source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'down' : 'connecting')
    source.onmessage = (message) => {
      let frame: ServerFrame
      try { frame = JSON.parse(message.data) } catch { return }
      onFrame(frame)
    }
    return () => source.close()
  }
}

/**
 * The access token: taken from `?token=` once, kept in this tab's sessionStorage, and removed from the address bar
 * so it does not end up in history, bookmarks or screenshots.
 */
export function takeToken(): string | null {
  const url = new URL(window.location.href)
  const fromUrl = url.searchParams.get('token')
  if (fromUrl) {
    sessionStorage.setItem('keel.token', fromUrl)
    url.searchParams.delete('token')
    window.history.replaceState(null, '', url.pathname + url.search + url.hash)
    return fromUrl
  }
  return sessionStorage.getItem('keel.token')
}
