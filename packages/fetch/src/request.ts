// One web_fetch request: HTTP(S) GET with every hop's address checked before connecting and the connection pinned
// to the checked address (no second DNS answer can point it elsewhere), redirects followed only on the same host
// (another host is the model's next call, so the permission check sees it), and the body capped in bytes and the
// whole exchange in time.
import { lookup as dnsLookup } from 'node:dns/promises'
import type { IncomingMessage } from 'node:http'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { LookupFunction } from 'node:net'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { bareHost, isPublicAddress, rangeOf } from './address.ts'

interface RequestLimits {
  /** The whole exchange, redirects included. */
  timeoutMs: number
  /** Body bytes kept (after decompression); the rest is cut. */
  maxBytes: number
  maxRedirects: number
}

export interface Resolved {
  address: string
  family: 4 | 6
}

export interface RequestOptions {
  limits: RequestLimits
  signal: AbortSignal
  /** Whether a non-public address is allowed for this host (the person named it). */
  privateAllowed: (host: string) => boolean
  /** The resolver; the system's by default. */
  resolve?: (host: string) => Promise<Resolved[]>
}

export type Fetched =
  | {
      kind: 'page'
      url: string
      status: number
      contentType?: string
      body: Buffer
      /** Bytes cut past `maxBytes`. */
      truncated: boolean
    }
  /** A redirect to another host (or from https to http): not followed. */
  | { kind: 'elsewhere'; url: string; status: number; location: string }

export class FetchError extends Error {}

const systemResolve = async (host: string): Promise<Resolved[]> =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((entry) => ({
    address: entry.address,
    family: entry.family === 6 ? 6 : 4,
  }))

export function parseTarget(raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new FetchError(`${JSON.stringify(raw.slice(0, 200))} is not a URL (give an absolute http:// or https:// URL)`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new FetchError(`only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, '')}`)
  if (url.username || url.password) throw new FetchError('a URL with a user name or password is not fetched')
  return url
}

/** The address to connect to for `url`, checked: a non-public one only when the person named the host. */
async function addressFor(url: URL, options: RequestOptions): Promise<Resolved> {
  const host = bareHost(url.hostname)
  const literal = rangeOf(host) !== undefined
  let candidates: Resolved[]
  try {
    candidates = literal
      ? [{ address: host, family: host.includes(':') ? 6 : 4 }]
      : await (options.resolve ?? systemResolve)(host)
  } catch (error) {
    throw new FetchError(`cannot resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  if (!candidates.length) throw new FetchError(`cannot resolve ${host}: no address`)
  // Every answer is judged: a name that resolves to a public and a private address is treated as private.
  const hidden = candidates.find((candidate) => !isPublicAddress(candidate.address))
  if (hidden && !options.privateAllowed(host))
    throw new FetchError(
      `${host} resolves to ${hidden.address}, a ${rangeOf(hidden.address)} address: refused unless the person allows the host by name (sandbox.allowedDomains)`,
    )
  return candidates[0]!
}

export async function fetchTarget(raw: string, options: RequestOptions): Promise<Fetched> {
  const { limits, signal } = options
  const deadline = AbortSignal.timeout(limits.timeoutMs)
  const both = AbortSignal.any([signal, deadline])
  let url = parseTarget(raw)
  const firstHost = url.host
  for (let hop = 0; ; hop++) {
    const target = await addressFor(url, options)
    const response = await get(url, target, both, signal)
    const status = response.statusCode ?? 0
    const location = response.headers.location
    if (status >= 300 && status < 400 && location) {
      response.destroy()
      let next: URL
      try {
        next = new URL(location, url)
      } catch {
        throw new FetchError(`${url.href} redirected to ${JSON.stringify(location.slice(0, 200))}, which is not a URL`)
      }
      if (next.host !== firstHost || (url.protocol === 'https:' && next.protocol !== 'https:'))
        return { kind: 'elsewhere', url: url.href, status, location: next.href }
      if (hop + 1 > limits.maxRedirects)
        throw new FetchError(`${raw} redirected more than ${limits.maxRedirects} times (a redirect loop?)`)
      url = parseTarget(next.href)
      continue
    }
    const { body, truncated } = await readBody(response, limits.maxBytes, both, deadline)
    return {
      kind: 'page',
      url: url.href,
      status,
      ...(response.headers['content-type'] ? { contentType: response.headers['content-type'] } : {}),
      body,
      truncated,
    }
  }
}

function abortError(signal: AbortSignal, deadline: AbortSignal): Error {
  return deadline.aborted
    ? new FetchError('the fetch took longer than its time limit')
    : signal.reason instanceof Error
      ? signal.reason
      : new Error('cancelled')
}

function get(url: URL, target: Resolved, signal: AbortSignal, caller: AbortSignal): Promise<IncomingMessage> {
  // The socket connects to the checked address whatever the resolver would say now; TLS still verifies the name.
  const lookup: LookupFunction = (_host, opts, callback) => {
    if ((opts as { all?: boolean }).all) (callback as (e: null, a: Resolved[]) => void)(null, [target])
    else callback(null, target.address, target.family)
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new FetchError('the fetch was stopped before it started'))
    const request = send(url, {
      method: 'GET',
      lookup,
      signal,
      headers: {
        'user-agent': 'keel-web-fetch (+https://www.npmjs.com/package/keel)',
        accept: 'text/html,application/xhtml+xml,text/markdown,text/plain,application/json;q=0.9,*/*;q=0.5',
        'accept-encoding': 'gzip, deflate, br',
      },
    })
    request.once('response', resolve)
    request.once('error', (error) =>
      reject(
        caller.aborted
          ? caller.reason instanceof Error
            ? caller.reason
            : new Error('cancelled')
          : signal.aborted
            ? new FetchError('the fetch took longer than its time limit')
            : new FetchError(`cannot fetch ${url.href}: ${(error as NodeJS.ErrnoException).code ?? error.message}`),
      ),
    )
    request.end()
  })
}

/** The body, decompressed, up to `maxBytes` (a compressed bomb stops at the same cap). */
function readBody(
  response: IncomingMessage,
  maxBytes: number,
  signal: AbortSignal,
  deadline: AbortSignal,
): Promise<{ body: Buffer; truncated: boolean }> {
  const encoding = String(response.headers['content-encoding'] ?? '').toLowerCase()
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined
  const stream = decoder ? response.pipe(decoder) : response
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    const finish = (error?: Error, truncated = false) => {
      if (done) return
      done = true
      signal.removeEventListener('abort', onAbort)
      if (truncated || error) {
        response.destroy()
        decoder?.destroy()
      }
      if (error) reject(error)
      else resolve({ body: Buffer.concat(chunks, size), truncated })
    }
    const onAbort = () => finish(abortError(signal, deadline))
    signal.addEventListener('abort', onAbort, { once: true })
    stream.on('data', (chunk: Buffer) => {
      if (done) return
      const room = maxBytes - size
      // Full to the byte: only more data says the body was longer.
      if (room === 0 || chunk.length > room) {
        chunks.push(chunk.subarray(0, room))
        size += room
        finish(undefined, true)
        return
      }
      chunks.push(chunk)
      size += chunk.length
    })
    stream.once('end', () => finish())
    stream.once('error', (error) =>
      finish(
        new FetchError(`the page's body could not be read: ${(error as NodeJS.ErrnoException).code ?? error.message}`),
      ),
    )
    response.once('aborted', () => finish(new FetchError('the server closed the connection mid-body')))
  })
}
