import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { Attachments } from '../src/attachments.ts'

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)
let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-attach-'))
  writeFileSync(join(dir, 'shot.png'), PNG)
  writeFileSync(join(dir, 'my shot.png'), PNG)
  writeFileSync(join(dir, 'notes.png'), 'text')
  writeFileSync(join(dir, 'huge.png'), PNG)
  truncateSync(join(dir, 'huge.png'), 50 * 1024 * 1024)
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const label = `[image shot.png ${PNG.length} B]`

test('a typed @path becomes its label once a space follows, and the prompt carries the image after the words', () => {
  const attachments = new Attachments(() => dir)
  expect(attachments.attach('look at @shot.png')).toEqual({})
  const typed = attachments.attach('look at @shot.png ')
  expect(typed).toEqual({ text: `look at ${label} ` })
  const sent = attachments.content(`${typed.text}please`)
  if ('error' in sent) throw new Error(sent.error)
  expect(sent.content.map((block) => block.type)).toEqual(['text', 'image'])
  expect(sent.content[0]).toEqual({ type: 'text', text: 'look at please' })
  expect(sent.content[1]).toMatchObject({ mediaType: 'image/png', name: 'shot.png', data: PNG.toString('base64') })
})

test('a dragged path (absolute, quoted or with escaped spaces) attaches too; a plain word never does', () => {
  const attachments = new Attachments(() => dir)
  expect(attachments.attach(`'${join(dir, 'my shot.png')}' `).text).toBe(`[image my shot.png ${PNG.length} B] `)
  expect(attachments.attach(`${join(dir, 'my\\ shot.png')} `).text).toBe(`[image my shot.png ${PNG.length} B] `)
  expect(attachments.attach('shot.png ')).toEqual({})
  // At send time a path at the very end counts as well.
  const sent = attachments.content(`what is ${join(dir, 'shot.png')}`)
  expect('content' in sent && sent.content.map((block) => block.type)).toEqual(['text', 'image'])
})

test('not an image, 50 MB, or a missing file: one line, and the prompt is not sent', () => {
  const attachments = new Attachments(() => dir)
  expect(attachments.attach('@notes.png ').error).toBe('notes.png is not a PNG, JPEG, GIF or WebP image')
  expect(attachments.attach('@notes.png x').error).toBeUndefined() // said once while typing
  expect(attachments.content('@huge.png')).toEqual({
    error: 'huge.png is 50.0 MB, over the 3.6 MB limit for an image in a prompt',
  })
  expect(attachments.content('see @gone.png')).toEqual({ error: 'gone.png: no such file' })
  expect(attachments.content('plain words')).toEqual({
    content: [{ type: 'text', text: 'plain words' }],
    text: 'plain words',
  })
})
