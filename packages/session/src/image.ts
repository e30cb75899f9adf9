// Images a person attaches to a prompt: the one rule every door and `keel -p --image` uses for what is accepted
// and how it is named. Browser-safe (the `@keel/session/image` entry imports nothing): the web composer checks a
// pasted file with it before upload, and the host checks the upload again with the same code.
import type { ImageBlock } from './messages.ts'

/** The types every provider Keel speaks accepts (Anthropic, OpenAI chat and Responses: PNG, JPEG, GIF, WebP). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const
export type ImageType = (typeof IMAGE_TYPES)[number]

/**
 * Largest image a prompt takes: its base64 (4/3 of this) stays under the 5 MB per image Anthropic accepts, the
 * smallest of the providers' limits (OpenAI: 20 MB per image). Keel does not resize, so a bigger one is refused.
 */
export const IMAGE_MAX_BYTES = 3_750_000

const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0))

function startsWith(head: Uint8Array, bytes: readonly number[], at = 0): boolean {
  if (head.length < at + bytes.length) return false
  return bytes.every((byte, i) => head[at + i] === byte)
}

/** The image type by magic number (never by extension: a renamed file is still known, a `.png` of text is not). */
export function imageType(head: Uint8Array): ImageType | undefined {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png'
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg'
  if (startsWith(head, ascii('GIF87a')) || startsWith(head, ascii('GIF89a'))) return 'image/gif'
  if (startsWith(head, ascii('RIFF')) && startsWith(head, ascii('WEBP'), 8)) return 'image/webp'
  return undefined
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

function base64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

/** Bytes the base64 `data` decodes to, without decoding it. */
export function imageBytes(block: { data: string }): number {
  const data = block.data
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding)
}

/**
 * Why a file of `size` bytes starting with `head` cannot go in a prompt (not an image, too large), in one line, or
 * undefined when it can. A caller may check this on a file's first bytes before reading it whole.
 */
export function imageError(name: string, head: Uint8Array, size: number): string | undefined {
  if (!imageType(head.subarray(0, 16))) return `${name} is not a PNG, JPEG, GIF or WebP image`
  if (size > IMAGE_MAX_BYTES)
    return `${name} is ${formatBytes(size)}, over the ${formatBytes(IMAGE_MAX_BYTES)} limit for an image in a prompt`
  return undefined
}

/**
 * An image block for a prompt from a file's bytes, or the one line that says why not (imageError).
 * `name` is what the person called it (a path's last part); it is kept on the log for the doors, never sent.
 */
export function imageBlock(name: string, bytes: Uint8Array): ImageBlock | { error: string } {
  const error = imageError(name, bytes, bytes.length)
  if (error) return { error }
  return { type: 'image', mediaType: imageType(bytes.subarray(0, 16))!, data: base64(bytes), name }
}

/**
 * An image block that came over a wire (the web composer, an ACP client) as base64 with a claimed type: checked
 * like a file, by its bytes, so a claimed `image/png` that is something else is refused.
 */
export function imageFromBase64(name: string, data: string): ImageBlock | { error: string } {
  let binary: string
  try {
    binary = atob(data)
  } catch {
    return { error: `${name} is not valid base64` }
  }
  const head = new Uint8Array(Math.min(16, binary.length))
  for (let i = 0; i < head.length; i++) head[i] = binary.charCodeAt(i)
  const error = imageError(name, head, binary.length)
  if (error) return { error }
  const type = imageType(head)!
  return { type: 'image', mediaType: type, data: btoa(binary), name }
}

/** How every door shows an attached image: `[image shot.png 120 KB]`. */
export function imageLabel(image: { name?: string; mediaType: string; bytes: number }): string {
  return `[image ${image.name || image.mediaType} ${formatBytes(image.bytes)}]`
}
