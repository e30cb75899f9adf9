// The OpenAI-compatible adapter against a raw server that writes the bytes itself: what real servers do and the
// fake provider does not (errors inside a 200 stream, unparseable data, a plain-text error page, events cut across
// writes at odd places, a consumer that stops early).
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createOpenAiCompatible } from '../src/openai-provider.ts'
import { assemble, collect, failure, hello } from './stream-support.ts'

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((done) => server?.close(done) ?? done(undefined))
  server = undefined
})

/** A promise that settles when the server sees its response closed (`closed` is the 'close' listener). */
function closing(): { gone: Promise<void>; closed: () => void } {
  let closed!: () => void
  const gone = new Promise<void>((done) => {
    closed = done
  })
  return { gone, closed }
}

/** Serves every request with `handle`; resolves with an adapter pointed at it. */
async function rawServer(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  server = createServer((req, res) => {
    req.resume()
    req.on('end', () => handle(req, res))
  })
  await new Promise<void>((ready) => server!.listen(0, '127.0.0.1', ready))
  const { port } = server.address() as AddressInfo
  return createOpenAiCompatible('openai-compatible', 'm', {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    env: {},
    cwd: process.cwd(),
  })
}

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

describe('OpenAI-compatible adapter on the wire', () => {
  it('reads events cut anywhere across writes, CRLF line ends, comments and [DONE]', async () => {
    const body = [
      ': keep-alive comment\r\n\r\n',
      chunk({ content: 'Hel' }).replace(/\n/g, '\r\n'),
      chunk({ content: 'lo, wörld' }),
      chunk({}, 'stop'),
      `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } })}\n\n`,
      'data: [DONE]\n\n',
    ].join('')
    const adapter = await rawServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const bytes = Buffer.from(body)
      // Three bytes at a time: splits lines, a CRLF pair and the two bytes of ö.
      for (let i = 0; i < bytes.length; i += 3) {
        res.write(bytes.subarray(i, i + 3))
        if (i % 60 === 0) await new Promise((done) => setImmediate(done))
      }
      res.end()
    })
    const chunks = await collect(adapter.stream(hello, new AbortController().signal))
    expect(assemble(chunks).message().content).toEqual([{ type: 'text', text: 'Hello, wörld' }])
    expect(chunks.slice(-2)).toEqual([
      { type: 'usage', usage: { input: 7, output: 2 } },
      { type: 'finish', reason: 'stop' },
    ])
  })

  it('turns an error object inside a 200 stream into a one-line server error with its message', async () => {
    const adapter = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(
        `${chunk({ content: 'partial' })}data: {"error":{"message":"model crashed\\nbadly","type":"server_error"}}\n\n`,
      )
    })
    const error = await failure(adapter.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('server')
    expect(error.message).toBe('openai-compatible: server error (model crashed badly)')
  })

  it('reports data that is not JSON as a malformed response', async () => {
    const adapter = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end('data: {"choices": [\n\n')
    })
    const error = await failure(adapter.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('server')
    expect(error.message).toMatch(/^openai-compatible: malformed response from http:\/\/127\.0\.0\.1:\d+\/v1 \(/)
  })

  it('quotes a plain-text error page and a JSON error that is a bare string', async () => {
    let n = 0
    const adapter = await rawServer((_req, res) => {
      if (n++ === 0) {
        res.writeHead(502, { 'content-type': 'text/html' })
        res.end('<html>\n<body>Bad gateway</body>\n</html>')
      } else {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end('{"error":"model \\"m\\" not found, try pulling it first"}')
      }
    })
    const page = await failure(adapter.stream(hello, new AbortController().signal))
    expect(page.kind).toBe('server')
    expect(page.status).toBe(502)
    expect(page.message).toBe('openai-compatible: server error (502: <html> <body>Bad gateway</body> </html>)')
    const missing = await failure(adapter.stream(hello, new AbortController().signal))
    expect(missing.kind).toBe('bad-request')
    // The provider's words, and which model at which URL, so a wrong name or path is plain.
    expect(missing.message).toBe(
      `openai-compatible: request rejected for m at ${adapter.options.baseURL}/chat/completions (404: model "m" not found, try pulling it first)`,
    )
  })

  it('gives up on an event that never ends (more than 16 MB) instead of buffering it, and closes the connection', async () => {
    const { gone, closed } = closing()
    const adapter = await rawServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.on('close', closed)
      const piece = 'x'.repeat(1024 * 1024)
      res.write('data: ')
      // A line without end, written until the client hangs up (the server never stops on its own).
      while (!res.destroyed) if (!res.write(piece)) await new Promise((done) => res.once('drain', done))
    })
    const error = await failure(adapter.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('server')
    expect(error.message).toMatch(/malformed response from .* \(an event longer than 16 MB\)$/)
    await gone
  })

  it('says the stream ended early when the body ends cleanly without a finish reason', async () => {
    const adapter = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(chunk({ content: 'cut' }))
    })
    const error = await failure(adapter.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('network')
    expect(error.message).toContain('the stream ended before the reply was complete')
  })

  it('closes the connection when the consumer stops reading', async () => {
    const { gone, closed } = closing()
    const adapter = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chunk({ content: 'first' }))
      res.on('close', closed) // never ended by the server: only the client can close it
    })
    for await (const piece of adapter.stream(hello, new AbortController().signal))
      if (piece.type === 'text-delta') break
    await gone
  })

  it('speaks TLS to an https base URL, and refuses a certificate it cannot verify, naming the URL', async () => {
    // A self-signed certificate for 127.0.0.1 (test-support/tls): a plain-HTTP client would see a reset, not this.
    const tls = createTlsServer({
      key: readFileSync(new URL('../../../test-support/tls/key.pem', import.meta.url)),
      cert: readFileSync(new URL('../../../test-support/tls/cert.pem', import.meta.url)),
    })
    server = tls
    await new Promise<void>((ready) => tls.listen(0, '127.0.0.1', ready))
    const { port } = tls.address() as AddressInfo
    const adapter = createOpenAiCompatible('openai-compatible', 'm', {
      baseUrl: `https://127.0.0.1:${port}/v1`,
      env: {},
      cwd: process.cwd(),
    })
    const error = await failure(adapter.stream(hello, new AbortController().signal))
    expect(error.kind).toBe('network')
    expect(error.message).toBe(`openai-compatible: cannot reach https://127.0.0.1:${port}/v1 (self-signed certificate)`)
  })
})
