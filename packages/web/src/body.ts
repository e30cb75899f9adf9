/** What reading a request body came to: its text, or that it is over the limit (and reading stopped there). */
export type BodyRead = { text: string } | { tooLarge: true }

/**
 * Reads a request body, counting bytes as they arrive and giving up as soon as the count passes `limit`: a declared
 * `Content-Length` over the limit is refused before any byte is read, and a chunked body that grows past it is
 * abandoned there rather than buffered whole.
 */
export async function readBodyLimited(request: Request, limit: number): Promise<BodyRead> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) return { tooLarge: true }
  const body = request.body
  if (!body) return { text: '' }
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      void reader.cancel().catch(() => {})
      return { tooLarge: true }
    }
    chunks.push(value)
  }
  return { text: Buffer.concat(chunks, total).toString('utf8') }
}
