import type { FileHandle } from 'node:fs/promises'
import { type ImageType, imageType } from '@keel/session/image'

export const SNIFF_BYTES = 8192

/** The C0 control bytes that are not common in text (all but NUL, tab to carriage return, and escape). */
const CONTROL = /[\x01-\x08\x0e-\x1a\x1c-\x1f]/

export type Sniffed = { kind: 'text' } | { kind: 'image'; mediaType: ImageType } | { kind: 'binary'; why: string }

function startsWith(head: Uint8Array, bytes: readonly number[], at = 0): boolean {
  if (head.length < at + bytes.length) return false
  return bytes.every((byte, i) => head[at + i] === byte)
}

/**
 * Decides from the first bytes what a file is. Images go by magic number, not by extension, so a renamed file is
 * still recognised and a `.png` that is really text is read as text.
 */
export function sniff(head: Uint8Array): Sniffed {
  const image = imageType(head)
  if (image) return { kind: 'image', mediaType: image }
  if (startsWith(head, [0xff, 0xfe]) || startsWith(head, [0xfe, 0xff]))
    return { kind: 'binary', why: 'UTF-16 text, which these tools do not decode' }
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength)
  if (bytes.indexOf(0) >= 0) return { kind: 'binary', why: 'it contains NUL bytes' }
  // One native scan answers for most text; a loop over every byte was most of a fallback grep's JavaScript time.
  if (!CONTROL.test(bytes.toString('latin1'))) return { kind: 'text' }
  let control = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!
    // Tab, newline, vertical tab, form feed, carriage return and escape are common in text; other C0 bytes are not.
    if (byte < 0x20 && !(byte >= 0x09 && byte <= 0x0d) && byte !== 0x1b) control++
  }
  if (head.length && control / head.length > 0.1) return { kind: 'binary', why: 'it is mostly control bytes' }
  return { kind: 'text' }
}

export async function sniffHandle(handle: FileHandle): Promise<Sniffed> {
  const buffer = Buffer.alloc(SNIFF_BYTES)
  const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0)
  return sniff(buffer.subarray(0, bytesRead))
}
