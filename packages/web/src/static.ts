import { readFileSync, statSync } from 'node:fs'
import { extname, join } from 'node:path'

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
}

/**
 * The page may load only its own scripts and styles and talk only to this host. Model output is rendered as text
 * anyway; this is the second lock on the door.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

export const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

/** One path segment of a built file: no dots at the start, so no `..` and no hidden files. */
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/

/** A file of the built client, or undefined. `/` is the page itself; only plain relative paths are served. */
export function clientFile(clientDir: string, urlPath: string): Response | undefined {
  const relative = urlPath === '/' ? 'index.html' : urlPath.replace(/^\//, '')
  const segments = relative.split('/')
  if (!segments.every((segment) => SEGMENT.test(segment))) return undefined
  const path = join(clientDir, ...segments)
  try {
    if (!statSync(path).isFile()) return undefined
  } catch {
    return undefined
  }
  const type = TYPES[extname(path)] ?? 'application/octet-stream'
  const headers: Record<string, string> = { ...SECURITY_HEADERS, 'content-type': type }
  if (type.startsWith('text/html')) {
    headers['content-security-policy'] = CONTENT_SECURITY_POLICY
    headers['cache-control'] = 'no-store'
  } else {
    // Built assets carry a content hash in their names.
    headers['cache-control'] = segments[0] === 'assets' ? 'public, max-age=31536000, immutable' : 'no-cache'
  }
  return new Response(readFileSync(path), { headers })
}
