import { isIP } from 'node:net'

export const DEFAULT_PORT = 4317
export const DEFAULT_HOST = '127.0.0.1'

export interface BindAddress {
  host: string
  port: number
  /** The host is reachable from other machines. */
  remote: boolean
}

/** Loopback names and addresses: 127.0.0.0/8, ::1 (also IPv4-mapped), and `localhost`. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h
  return isIP(v4) === 4 && v4.startsWith('127.')
}

/**
 * Where `keel serve` listens. Loopback by default. Any other address — including the wildcards 0.0.0.0 and ::,
 * which expose every interface — is refused unless KEEL_SERVE_ALLOW_REMOTE=1: the server speaks plain HTTP, so on
 * a network the token travels in the clear and anyone who sees it can run commands as you.
 */
export function resolveBind(
  flags: { port?: string; host?: string },
  env: NodeJS.ProcessEnv = process.env,
): BindAddress {
  let port = DEFAULT_PORT
  if (flags.port !== undefined) {
    if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65535)
      throw new Error(`--port must be a number from 0 to 65535 (0: any free port), not ${JSON.stringify(flags.port)}`)
    port = Number(flags.port)
  }
  const host = (flags.host ?? DEFAULT_HOST).trim()
  if (!host) throw new Error('--host is empty')
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(host))
    throw new Error(`--host ${JSON.stringify(host)} is not a host name or address`)
  const remote = !isLoopback(host)
  if (remote && env.KEEL_SERVE_ALLOW_REMOTE !== '1') {
    throw new Error(
      `refusing to serve on ${host}: it is not a loopback address, and keel serve speaks plain HTTP (set KEEL_SERVE_ALLOW_REMOTE=1 to do it anyway, e.g. behind a TLS proxy)`,
    )
  }
  return { host: host.replace(/^\[|\]$/g, ''), port, remote }
}

/** `http://host:port` with IPv6 addresses bracketed. */
export function originOf(host: string, port: number): string {
  return `http://${isIP(host) === 6 ? `[${host}]` : host}:${port}`
}
