import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** 192 random bits, URL-safe: the only thing standing between the page's API and anyone who can reach the port. */
export function newToken(): string {
  return randomBytes(24).toString('base64url')
}

/**
 * Constant-time comparison. Both sides are hashed first so inputs of any length compare in the same time and
 * `timingSafeEqual` never sees buffers of different sizes.
 */
export function tokenMatches(expected: string, given: string | null | undefined): boolean {
  if (typeof given !== 'string' || !given) return false
  const a = createHash('sha256').update(expected).digest()
  const b = createHash('sha256').update(given).digest()
  return timingSafeEqual(a, b)
}

/**
 * The token of an API request: `Authorization: Bearer <t>` or `X-Keel-Token: <t>` (the page's, from its address's
 * fragment). Never a cookie, which every port of the host name shares, so any local dev server the browser visits
 * would receive it; never `?token=`, which a cross-site form or `no-cors` request could replay and logs keep.
 */
export function requestToken(request: Request): string | undefined {
  const auth = request.headers.get('authorization')
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, '').trim()
  const header = request.headers.get('x-keel-token')
  if (header) return header.trim()
  return undefined
}
