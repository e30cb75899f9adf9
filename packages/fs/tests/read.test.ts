import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sniff } from '@keel/fs'
import { fsKeel, type FsKeel } from './support.ts'

// 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)

let t: FsKeel
beforeAll(async () => {
  t = await fsKeel({ maxReadLines: 5, maxLineChars: 50 })
})
afterAll(() => t.dispose())

describe('read', () => {
  it('numbers lines like cat -n and says nothing more when the whole file fits', async () => {
    t.put('a.txt', 'one\ntwo\nthree\n')
    const { text, isError } = await t.run('read', { path: 'a.txt' })
    expect(isError).toBe(false)
    expect(text).toBe('     1\tone\n     2\ttwo\n     3\tthree')
  })

  it('reads the configured default number of lines and says how many remain', async () => {
    t.put('long.txt', Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n'))
    const { text } = await t.run('read', { path: 'long.txt' })
    expect(text.split('\n')).toHaveLength(6)
    expect(text).toContain('     5\tline 5')
    expect(text.endsWith('… 7 more lines; use offset=6 to read on.')).toBe(true)
  })

  it('honours offset and limit', async () => {
    const { text } = await t.run('read', { path: 'long.txt', offset: 11, limit: 5 })
    expect(text).toBe('    11\tline 11\n    12\tline 12')
    const middle = await t.run('read', { path: 'long.txt', offset: 3, limit: 2 })
    expect(middle.text).toBe('     3\tline 3\n     4\tline 4\n… 8 more lines; use offset=5 to read on.')
  })

  it('refuses an offset past the end', async () => {
    const { text, isError } = await t.run('read', { path: 'long.txt', offset: 13 })
    expect(isError).toBe(true)
    expect(text).toBe('Error: offset 13 is past the end of long.txt, which has 12 lines')
  })

  it('cuts long lines with a marker', async () => {
    t.put('wide.txt', `short\n${'x'.repeat(120)}\n`)
    const { text } = await t.run('read', { path: 'wide.txt' })
    expect(text).toBe(`     1\tshort\n     2\t${'x'.repeat(50)} … [line cut at 50 characters; 120 B in full]`)
  })

  it('reads CRLF files without showing the CR, and UTF-8 intact, BOM dropped', async () => {
    t.put('crlf.txt', '\uFEFFgrüße\r\n日本語 🎉\r\n')
    const { text } = await t.run('read', { path: 'crlf.txt' })
    expect(text).toBe('     1\tgrüße\n     2\t日本語 🎉')
  })

  it('cuts a long line of multibyte characters on a character boundary', async () => {
    t.put('emoji.txt', '🎉'.repeat(100))
    const { text } = await t.run('read', { path: 'emoji.txt' })
    const body = text.split('\t')[1]!.split(' … ')[0]!
    expect(body).toBe('🎉'.repeat(25))
    expect(text).toContain('[line cut at 50 characters; 400 B in full]')
  })

  it('returns images as image blocks', async () => {
    t.put('pic.dat', PNG) // recognised by content, not by name
    const result = await t.call('read', { path: 'pic.dat' })
    expect(result.isError).toBe(false)
    expect(result.content[1]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG.toString('base64') })
    expect(result.content[0]).toEqual({ type: 'text', text: `Image pic.dat (image/png, ${PNG.length} B):` })
  })

  it('recognises JPEG, GIF and WebP by magic number, and refuses an image over the limit', async () => {
    expect(sniff(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toEqual({ kind: 'image', mediaType: 'image/jpeg' })
    expect(sniff(Buffer.from('GIF89a\x01\x00', 'latin1'))).toEqual({ kind: 'image', mediaType: 'image/gif' })
    expect(sniff(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'))).toEqual({
      kind: 'image',
      mediaType: 'image/webp',
    })
    expect(sniff(Buffer.from('plain text\twith tabs\n'))).toEqual({ kind: 'text' })
    const tiny = await fsKeel({ maxImageBytes: 10 })
    try {
      tiny.put('pic.png', PNG)
      const { text, isError } = await tiny.run('read', { path: 'pic.png' })
      expect(isError).toBe(true)
      expect(text).toBe(`Error: pic.png is a ${PNG.length} B image, over the 10 B limit for returning images`)
    } finally {
      await tiny.dispose()
    }
  })

  it('tells text from binary by NUL bytes, UTF-16 marks and the share of control bytes', () => {
    const text = 'a line of text\n'.repeat(10)
    expect(sniff(Buffer.from(`${text}\x1b[1m\f\v\r\n`))).toEqual({ kind: 'text' })
    expect(sniff(Buffer.from(`${text}\x00`))).toEqual({ kind: 'binary', why: 'it contains NUL bytes' })
    expect(sniff(Buffer.from('\xff\xfeh\x00i\x00', 'latin1'))).toMatchObject({ kind: 'binary' })
    // 10% control bytes is still text, just over it is not; sniff sees a view into a larger buffer as itself.
    const share = (control: number) => Buffer.from('\x01'.repeat(control) + 'x'.repeat(100 - control), 'latin1')
    expect(sniff(share(10))).toEqual({ kind: 'text' })
    expect(sniff(share(11))).toEqual({ kind: 'binary', why: 'it is mostly control bytes' })
    const pool = Buffer.concat([Buffer.from('\x00\x01\x02'), Buffer.from('plain')])
    expect(sniff(pool.subarray(3))).toEqual({ kind: 'text' })
  })

  it('refuses binary files with a clear message', async () => {
    t.put('blob.bin', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0x00]))
    const { text, isError } = await t.run('read', { path: 'blob.bin' })
    expect(isError).toBe(true)
    expect(text).toBe(
      'Error: blob.bin is a binary file (9 B; it contains NUL bytes); read returns text and images only — use bash (file, xxd, strings) to inspect it',
    )
  })

  it('says so for a missing file, a directory and an empty file', async () => {
    expect(await t.run('read', { path: 'nope.txt' })).toEqual({ isError: true, text: 'Error: nope.txt does not exist' })
    t.put('dir/x.txt', 'x')
    expect(await t.run('read', { path: 'dir' })).toEqual({
      isError: true,
      text: 'Error: dir is a directory; use ls to list it',
    })
    t.put('empty.txt', '')
    expect(await t.run('read', { path: 'empty.txt' })).toEqual({ isError: false, text: 'empty.txt is empty.' })
  })

  it('rejects bad arguments through the registry', async () => {
    const { text, isError } = await t.run('read', { path: 'a.txt', offset: 0 })
    expect(isError).toBe(true)
    expect(text).toMatch(/^Error: invalid arguments:\noffset: /)
  })
})

describe('read with a character budget', () => {
  let small: FsKeel
  beforeAll(async () => {
    small = await fsKeel({ maxReadChars: 60 })
  })
  afterAll(() => small.dispose())

  it('stops early and says where to continue', async () => {
    small.put('f.txt', Array.from({ length: 20 }, (_, i) => `row ${i + 1}`).join('\n'))
    const { text } = await small.run('read', { path: 'f.txt' })
    const lines = text.split('\n')
    expect(lines.slice(0, -1)).toEqual(['     1\trow 1', '     2\trow 2', '     3\trow 3', '     4\trow 4'])
    expect(lines.at(-1)).toBe('… 16 more lines (this result reached its 60-character cap); use offset=5 to read on.')
  })
})
