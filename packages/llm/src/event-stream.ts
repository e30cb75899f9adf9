import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http'
import { createParser, type EventSourceMessage } from 'eventsource-parser'

// POST a JSON body and read server-sent events back, on node:http(s). The OpenAI-compatible adapter uses this
// instead of the `openai` SDK: the SDK rides on fetch, and loading Node's fetch (undici) and the SDK cost a cold
// `keel -p` about 60 ms before its first request (bench/startup.bench.ts). Retries and idle timeouts stay with the
// callers (withRetries, IdleWatch); this module only moves bytes and says what went wrong.

/** The server answered with a status outside 2xx; `body` is its text (the first 64 KB). */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    /** The response headers (retry-after and the rate-limit headers are read from them). */
    readonly headers: Record<string, string | string[] | undefined> = {},
  ) {
    super(`HTTP ${status}`)
    this.name = 'HttpStatusError'
  }
}

/** No answer, or the connection broke: `midStream` once the response had begun. */
export class ConnectionError extends Error {
  constructor(
    message: string,
    readonly midStream: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'ConnectionError'
  }
}

export interface EventStream {
  /**
   * The events in order; ends when the response ends, throws ConnectionError when it breaks off and SyntaxError for
   * an event longer than EVENT_LIMIT.
   */
  events: AsyncIterator<EventSourceMessage>
  /** Stops reading and closes the connection (a consumer that leaves early). */
  close(): void
}

export interface EventStreamRequest {
  headers: Record<string, string>
  body: string
  /** Aborting closes the connection; a pending call rejects with the signal's reason. */
  signal: AbortSignal
}

const ERROR_BODY_LIMIT = 64 * 1024
/** Events read ahead of the consumer before the socket is paused. */
const HIGH_WATER = 256
/**
 * The most text one event may carry. A server that streams a line without end would otherwise grow the parser's
 * buffer until memory runs out, and the idle timeout never fires while bytes keep coming.
 */
const EVENT_LIMIT = 16 * 1024 * 1024

export async function postEventStream(url: string, options: EventStreamRequest): Promise<EventStream> {
  const target = new URL(url)
  // node:https loads TLS; a local server (Ollama, vLLM, the bench's fake) never needs it.
  const send = target.protocol === 'https:' ? (await import('node:https')).request : httpRequest
  const { signal } = options
  signal.throwIfAborted()
  const body = Buffer.from(options.body)
  const requestOptions: RequestOptions = {
    method: 'POST',
    headers: { ...options.headers, 'content-length': String(body.length) },
  }
  return new Promise<EventStream>((resolve, reject) => {
    let request: ClientRequest
    const onAbort = () => request.destroy()
    const answered = (response: IncomingMessage) => {
      const status = response.statusCode ?? 0
      if (status >= 200 && status < 300) {
        resolve(readEvents(request, response, signal, () => signal.removeEventListener('abort', onAbort)))
        return
      }
      // An error status: keep the first bytes of the body for the message, then let the connection go.
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        if (text.length < ERROR_BODY_LIMIT) text += chunk
      })
      response.on('error', () => {})
      response.on('close', () => {
        signal.removeEventListener('abort', onAbort)
        if (signal.aborted) reject(signal.reason)
        else reject(new HttpStatusError(status, text.slice(0, ERROR_BODY_LIMIT), response.headers))
      })
    }
    request = send(target, requestOptions, answered)
    request.on('error', (error) => {
      signal.removeEventListener('abort', onAbort)
      reject(signal.aborted ? signal.reason : new ConnectionError(error.message, false, { cause: error }))
    })
    signal.addEventListener('abort', onAbort, { once: true })
    request.end(body)
  })
}

type Waiter = { resolve: (next: IteratorResult<EventSourceMessage>) => void; reject: (error: unknown) => void }

/** Turns the response body into an async iterator of events, pausing the socket while the consumer lags. */
function readEvents(
  request: ClientRequest,
  response: IncomingMessage,
  signal: AbortSignal,
  release: () => void,
): EventStream {
  const queue: EventSourceMessage[] = []
  let waiter: Waiter | undefined
  let ended = false
  let failure: unknown
  const settle = () => {
    if (!waiter) return
    const { resolve, reject } = waiter
    if (queue.length) {
      waiter = undefined
      resolve({ value: queue.shift()!, done: false })
      if (queue.length < HIGH_WATER / 2 && response.isPaused()) response.resume()
    } else if (failure !== undefined) {
      waiter = undefined
      reject(failure)
    } else if (ended) {
      waiter = undefined
      resolve({ value: undefined, done: true })
    }
  }
  /** Characters fed since the last event ended: the size of the one being parsed, at most. */
  let pending = 0
  const parser = createParser({
    onEvent: (event) => {
      pending = 0
      queue.push(event)
      if (queue.length >= HIGH_WATER) response.pause()
      settle()
    },
  })
  response.setEncoding('utf8')
  response.on('data', (chunk: string) => {
    if (failure !== undefined) return
    pending += chunk.length
    parser.feed(chunk)
    if (pending <= EVENT_LIMIT) return
    failure = new SyntaxError(`an event longer than ${EVENT_LIMIT / 1024 / 1024} MB`)
    request.destroy()
    settle()
  })
  response.on('error', () => {}) // 'close' below says what happened
  response.on('close', () => {
    release()
    if (response.complete) ended = true
    else if (failure === undefined)
      failure = signal.aborted ? signal.reason : new ConnectionError('the connection closed mid-response', true)
    settle()
  })
  const close = () => {
    if (!response.complete) request.destroy()
  }
  return {
    close,
    events: {
      next: () =>
        new Promise<IteratorResult<EventSourceMessage>>((resolve, reject) => {
          waiter = { resolve, reject }
          settle()
        }),
    },
  }
}
