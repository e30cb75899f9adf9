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
 * The token of an API request: `Authorization: Bearer <t>`, `X-Keel-Token: <t>`, or the page's cookie (`cookie`, read by
 * the caller). Never `?token=`: a query token is only exchanged for the cookie when the page loads, so it cannot be
 * replayed by a cross-site form or `no-cors` request that learned it.
 */
export function requestToken(request: Request, cookie?: string): string | undefined {
  const auth = request.headers.get('authorization')
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, '').trim()
  const header = request.headers.get('x-keel-token')
  if (header) return header.trim()
  return cookie || undefined
}
