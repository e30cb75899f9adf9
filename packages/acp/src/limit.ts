/**
 * A size limit on incoming NDJSON messages that keeps the connection alive. The SDK's own limit (32 MiB) errors the
 * whole input stream, so one oversized message used to end `keel acp` with exit 0 and no word. Here a line over the
 * limit is dropped as it streams in (never buffered whole), its top-level `id` and `method` are picked out on the
 * way, and `onRefused` is told, so the caller can answer that request with a JSON-RPC error and carry on.
 */

export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024

export interface RefusedMessage {
  /** Bytes of the line seen (without its newline). */
  bytes: number
  /** The request's id; `undefined` when the message had no top-level `id` (a notification, or not an object). */
  id?: string | number | null
  method?: string
}

const NEWLINE = 0x0a

/** Passes lines of at most `maxBytes` through unchanged; reports and drops longer ones. */
export function limitLines(
  input: ReadableStream<Uint8Array>,
  maxBytes: number,
  onRefused: (message: RefusedMessage) => void,
): ReadableStream<Uint8Array> {
  const reader = input.getReader()
  let pending: Uint8Array[] = []
  let pendingBytes = 0
  let refusing: { scanner: TopLevelScanner; bytes: number } | undefined

  const refuse = (pieces: Uint8Array[]) => {
    refusing ??= { scanner: new TopLevelScanner(), bytes: 0 }
    for (const piece of pieces) {
      refusing.scanner.feed(piece)
      refusing.bytes += piece.byteLength
    }
  }
  const finishRefusal = () => {
    if (!refusing) return
    const { scanner, bytes } = refusing
    refusing = undefined
    onRefused({
      bytes,
      ...(scanner.hasId ? { id: scanner.id } : {}),
      ...(scanner.method !== undefined ? { method: scanner.method } : {}),
    })
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) {
          finishRefusal()
          for (const piece of pending) controller.enqueue(piece)
          pending = []
          controller.close()
          return
        }
        let start = 0
        let forwarded = false
        while (start < value.byteLength) {
          const newline = value.indexOf(NEWLINE, start)
          const end = newline < 0 ? value.byteLength : newline
          const piece = value.subarray(start, end)
          if (refusing) {
            refuse([piece])
          } else if (pendingBytes + piece.byteLength > maxBytes) {
            refuse([...pending, piece])
            pending = []
            pendingBytes = 0
          } else if (newline >= 0) {
            for (const earlier of pending) controller.enqueue(earlier)
            controller.enqueue(value.subarray(start, newline + 1))
            pending = []
            pendingBytes = 0
            forwarded = true
          } else {
            pending.push(piece)
            pendingBytes += piece.byteLength
          }
          if (newline < 0) break
          finishRefusal()
          start = newline + 1
        }
        if (forwarded) return
      }
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
/** Enough for any id or method name a client sends; a longer key or value is not one we look for. */
const MAX_CAPTURE = 1024

/**
 * Reads a JSON object byte by byte without keeping it, remembering the values of its top-level `id` and `method`
 * members. Nested values are skipped by depth; strings are decoded with JSON.parse once they close.
 */
export class TopLevelScanner {
  hasId = false
  id: string | number | null = null
  method: string | undefined
  private depth = 0
  private inString = false
  private escaped = false
  private expect: 'key' | 'colon' | 'value' | 'comma' = 'key'
  private key = ''
  private capturing = false
  private captured: number[] = []
  private overflow = false
  private scalar = ''

  feed(bytes: Uint8Array): void {
    for (const byte of bytes) {
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (byte === BACKSLASH) this.escaped = true
        else if (byte === QUOTE) {
          this.closeString()
          continue
        }
        if (this.capturing) {
          if (this.captured.length < MAX_CAPTURE) this.captured.push(byte)
          else this.overflow = true
        }
        continue
      }
      const char = String.fromCharCode(byte)
      if (byte === QUOTE) {
        this.inString = true
        this.capturing =
          this.depth === 1 &&
          (this.expect === 'key' || (this.expect === 'value' && (this.key === 'id' || this.key === 'method')))
        this.captured = []
        this.overflow = false
      } else if (char === '{' || char === '[') {
        if (this.depth === 1 && this.expect === 'value') this.expect = 'comma'
        this.depth++
      } else if (char === '}' || char === ']') {
        if (this.depth === 1) this.endScalar()
        this.depth--
      } else if (this.depth === 1) {
        if (char === ':' && this.expect === 'colon') {
          this.expect = 'value'
          this.scalar = ''
        } else if (char === ',') {
          this.endScalar()
          this.expect = 'key'
        } else if (this.expect === 'value' && !/\s/.test(char) && this.scalar.length < 64) {
          this.scalar += char
        }
      }
    }
  }

  private closeString(): void {
    this.inString = false
    if (this.depth !== 1) return
    const wasCapturing = this.capturing
    this.capturing = false
    let text: string | undefined
    if (wasCapturing && !this.overflow) {
      try {
        const parsed: unknown = JSON.parse(`"${new TextDecoder().decode(new Uint8Array(this.captured))}"`)
        if (typeof parsed === 'string') text = parsed
      } catch {
        /* a broken string: not an id we can answer */
      }
    }
    if (this.expect === 'key') {
      this.key = text ?? ''
      this.expect = 'colon'
    } else if (this.expect === 'value') {
      if (this.key === 'id' && text !== undefined) {
        this.hasId = true
        this.id = text
      }
      if (this.key === 'method' && text !== undefined) this.method = text
      this.expect = 'comma'
    }
  }

  private endScalar(): void {
    if (this.expect !== 'value' || !this.scalar) return
    if (this.key === 'id') {
      try {
        const parsed: unknown = JSON.parse(this.scalar)
        if (parsed === null || typeof parsed === 'number') {
          this.hasId = true
          this.id = parsed
        }
      } catch {
        /* not a valid id */
      }
    }
    this.scalar = ''
    this.expect = 'comma'
  }
}
