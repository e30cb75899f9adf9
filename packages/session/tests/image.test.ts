import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'
import { IMAGE_MAX_BYTES, imageBlock, imageBytes, imageFromBase64, imageLabel, imageType } from '@keel/session/image'

const PNG_HEAD = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
const png = (size: number) => {
  const bytes = new Uint8Array(size)
  bytes.set(PNG_HEAD)
  return bytes
}

describe('@keel/session/image', () => {
  test('bundles for the browser: no node: import, no package at all', async () => {
    const bundle = await browserBundle('@keel/session/image')
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs.sort()).toEqual(['packages/session/src/image.ts'])
  })

  test('knows PNG, JPEG, GIF and WebP by their bytes, never by a name', () => {
    expect(imageType(png(16))).toBe('image/png')
    expect(imageType(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg')
    expect(imageType(new TextEncoder().encode('GIF89a....'))).toBe('image/gif')
    expect(imageType(new TextEncoder().encode('RIFF\0\0\0\0WEBPVP8 '))).toBe('image/webp')
    expect(imageType(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined()
    expect(imageType(new TextEncoder().encode('BM'))).toBeUndefined()
  })

  test('a block keeps the name and the exact bytes; the label says name and size', () => {
    const block = imageBlock('shot.png', png(120 * 1024))
    if ('error' in block) throw new Error(block.error)
    expect(block).toMatchObject({ type: 'image', mediaType: 'image/png', name: 'shot.png' })
    expect(imageBytes(block)).toBe(120 * 1024)
    expect(Uint8Array.from(atob(block.data), (c) => c.charCodeAt(0))).toEqual(png(120 * 1024))
    expect(imageLabel({ ...block, bytes: imageBytes(block) })).toBe('[image shot.png 120 KB]')
  })

  test('not an image, or over the limit: one line, no block', () => {
    expect(imageBlock('notes.png', new TextEncoder().encode('hello'))).toEqual({
      error: 'notes.png is not a PNG, JPEG, GIF or WebP image',
    })
    expect(imageBlock('huge.png', png(50 * 1024 * 1024))).toEqual({
      error: 'huge.png is 50.0 MB, over the 3.6 MB limit for an image in a prompt',
    })
    expect('error' in imageBlock('edge.png', png(IMAGE_MAX_BYTES))).toBe(false)
  })

  test('base64 from a wire is checked by its bytes like a file', () => {
    const ok = imageFromBase64('paste.png', btoa(String.fromCharCode(...png(64))))
    expect(ok).toMatchObject({ mediaType: 'image/png', name: 'paste.png' })
    expect(imageFromBase64('x', btoa('just text'))).toEqual({ error: 'x is not a PNG, JPEG, GIF or WebP image' })
    expect(imageFromBase64('x', '%%%')).toEqual({ error: 'x is not valid base64' })
  })
})
