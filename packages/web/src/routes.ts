import { Hono, type Context as HonoContext } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import { checkHost, checkOrigin, tokenCookieName, type AccessRefusal, type AllowedHosts } from './access.ts'
import { readBodyLimited } from './body.ts'
import type { EventHub } from './events.ts'
import type { RpcMethod, RpcMethods, RpcResult, ServerFrame } from './protocol.ts'
import { failure } from './rpc/failure.ts'
import { clientFile, SECURITY_HEADERS } from './static.ts'
import { requestToken, tokenMatches } from './token.ts'

const MAX_BODY_BYTES = 1024 * 1024

/** What the routes need of the host. */
export interface RouteHost {
  token: string
  /** Serve the built client from this folder; without it the API only. */
  clientDir?: string
  /** Known once the server listens; until then every request is refused. */
  hosts(): AllowedHosts | undefined
  /** Resolves once the plugins are up: the API waits for it, the page does not. */
  attached: Promise<void>
  hub: EventHub
  hello(): ServerFrame
  call<M extends RpcMethod>(method: M, params: unknown): Promise<RpcResult<RpcMethods[M]['value']>>
}

/**
 * The HTTP face: JSON RPC under `/api/<method>`, the server-sent event stream at `/api/events`, the built client, and
 * the checks every request passes first (host name, origin, token).
 */
export function routes(host: RouteHost): Hono {
  const cookieName = () => tokenCookieName(host.hosts()?.port ?? 0)
  const app = new Hono()
  app.use('*', async (c, next) => {
    await next()
    for (const [name, value] of Object.entries(SECURITY_HEADERS))
      if (!c.res.headers.has(name)) c.res.headers.set(name, value)
  })
  // DNS rebinding: a page on a name its owner points at 127.0.0.1 would otherwise be served as this host.
  app.use('*', async (c, next) => {
    const hosts = host.hosts()
    const refusal = checkHost(c.req.raw, hosts)
    if (refusal) return refuse(c, refusal)
    const method = c.req.method
    // Every state change — and everything under /api — must come from this host's own page (or a non-browser client).
    if ((method !== 'GET' && method !== 'HEAD') || c.req.path.startsWith('/api/')) {
      const cross = checkOrigin(c.req.raw, hosts!)
      if (cross) return refuse(c, cross)
    }
    await next()
  })
  app.use('/api/*', async (c, next) => {
    if (!tokenMatches(host.token, requestToken(c.req.raw, getCookie(c, cookieName())))) {
      return c.json(failure('unauthorized', 'missing or wrong token; open the URL that keel serve printed'), 401)
    }
    // Until the plugins are up (serve.ts listens before they boot) the API waits; the page itself does not.
    await host.attached
    await next()
  })
  app.get('/api/events', () => host.hub.open(host.hello()))
  app.post('/api/:method', async (c) => {
    const params = await readParams(c)
    if ('tooLarge' in params) {
      // Connection: close makes Node drop the socket after this answer instead of draining the rest of the body.
      c.header('connection', 'close')
      return c.json(failure('too-large', `request body over ${MAX_BODY_BYTES} bytes`), 413)
    }
    if ('error' in params) return c.json(failure('bad-request', params.error), 400)
    const result = await host.call(c.req.param('method') as RpcMethod, params.value)
    const status = !result.ok && result.error.code === 'unknown-method' ? 404 : 200
    return c.json(result, status)
  })
  app.all('/api/*', (c) =>
    c.json(failure('unknown-method', `no such endpoint: ${c.req.method} ${c.req.path.slice(0, 100)}`), 404),
  )
  const dir = host.clientDir
  app.get('*', (c) => {
    if (c.req.query('token') !== undefined) return bootstrap(c, host.token, cookieName())
    return (dir && clientFile(dir, c.req.path)) || c.text('not found', 404)
  })
  return app
}

/**
 * The printed URL's `?token=` is good for one thing: trading it for an HttpOnly, SameSite=Strict cookie, then a
 * redirect to the same address without it, so it leaves the address bar and history. Reloads and new tabs send the
 * cookie.
 */
function bootstrap(c: HonoContext, token: string, cookieName: string): Response {
  if (!tokenMatches(token, c.req.query('token'))) {
    c.header('cache-control', 'no-store')
    return c.text(
      'This link carries a wrong or old token. Open the URL that keel serve printed (each start has a new one).',
      401,
    )
  }
  setCookie(c, cookieName, token, { httpOnly: true, sameSite: 'Strict', path: '/' })
  const url = new URL(c.req.url)
  url.searchParams.delete('token')
  c.header('cache-control', 'no-store')
  // One leading slash: `//name` in a Location header would send the browser to another host.
  return c.redirect(`/${url.pathname.replace(/^[/\\]+/, '')}${url.search}`, 303)
}

function refuse(c: HonoContext, refusal: AccessRefusal): Response {
  if (c.req.path.startsWith('/api/')) return c.json(failure('forbidden', refusal.message), refusal.status)
  return c.text(refusal.message, refusal.status)
}

async function readParams(c: HonoContext): Promise<{ value: unknown } | { error: string } | { tooLarge: true }> {
  const body = await readBodyLimited(c.req.raw, MAX_BODY_BYTES)
  if ('tooLarge' in body) return body
  const text = body.text
  if (!text.trim()) return { value: {} }
  try {
    return { value: JSON.parse(text) }
  } catch {
    return { error: 'request body is not JSON' }
  }
}
