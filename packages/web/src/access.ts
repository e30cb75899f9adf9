import { isIP } from 'node:net'

/**
 * Which `Host` names and which `Origin`s the host answers. A page on another site can point a name it controls at
 * 127.0.0.1 (DNS rebinding) or send requests here from the user's browser; neither carries one of these names.
 */
export class AllowedHosts {
  private readonly names = new Set<string>()
  /** Bound to a wildcard (0.0.0.0, ::): any IP address literal is a name of this host. */
  private readonly anyAddress: boolean

  /**
   * `bindHost` is the address listened on (loopback names are always allowed), `port` the port actually bound;
   * `extra` are further `host[:port]` names, e.g. a proxy's (KEEL_SERVE_HOSTS).
   */
  constructor(
    bindHost: string,
    readonly port: number,
    extra: readonly string[] = [],
  ) {
    const bare = bindHost.replace(/^\[|\]$/g, '').toLowerCase()
    this.anyAddress = bare === '0.0.0.0' || bare === '::'
    for (const name of ['127.0.0.1', 'localhost', '[::1]', hostLiteral(bare)]) this.names.add(`${name}:${port}`)
    for (const entry of extra) {
      const name = entry.trim().toLowerCase()
      if (name) this.names.add(/:\d+$/.test(name) ? name : `${name}:80`)
    }
  }

  /** A `Host` header value (or an origin's `host`): `name[:port]`, port 80 when left out. */
  allows(host: string | null | undefined): boolean {
    if (!host) return false
    const value = host.trim().toLowerCase()
    const withPort = /:\d+$/.test(value) && !/^[^[]*:[^:]*:/.test(value) ? value : `${value}:80`
    if (this.names.has(withPort)) return true
    if (!this.anyAddress) return false
    const name = withPort.replace(/:\d+$/, '')
    return withPort.endsWith(`:${this.port}`) && isIP(name.replace(/^\[|\]$/g, '')) !== 0
  }

  /** An `Origin` header value: `null`, other schemes and other hosts are refused. */
  allowsOrigin(origin: string): boolean {
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return false
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
    return this.allows(url.port ? url.host : `${url.host}:${url.protocol === 'https:' ? 443 : 80}`)
  }
}

function hostLiteral(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host
}

export type AccessRefusal = { status: 403; message: string }

/** The request names this host (`Host`, falling back to the URL's host for in-process requests). */
export function checkHost(request: Request, hosts: AllowedHosts | undefined): AccessRefusal | undefined {
  if (!hosts) return { status: 403, message: 'the server is not listening yet' }
  const host = request.headers.get('host') ?? new URL(request.url).host
  if (hosts.allows(host)) return undefined
  return {
    status: 403,
    message: `this server does not answer to the host name ${JSON.stringify(String(host).slice(0, 100))}; open the URL that keel serve printed`,
  }
}

/**
 * The request comes from this host's own page or from a client that is not a browser. Browsers send `Origin` on every
 * POST (including `no-cors` ones) and on cross-origin GETs, and `Sec-Fetch-Site` on everything; non-browser clients
 * send neither and still need the token.
 */
export function checkOrigin(request: Request, hosts: AllowedHosts): AccessRefusal | undefined {
  const origin = request.headers.get('origin')
  if (origin !== null && !hosts.allowsOrigin(origin)) {
    return {
      status: 403,
      message: `requests from ${JSON.stringify(origin.slice(0, 100))} are refused; only this server's own page may call its API`,
    }
  }
  const site = request.headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin' && site !== 'none') {
    return {
      status: 403,
      message: `a ${JSON.stringify(site.slice(0, 20))} request is refused; only this server's own page may call its API`,
    }
  }
  return undefined
}
