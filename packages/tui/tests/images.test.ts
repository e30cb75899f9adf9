// The TUI's images, in process: a model without vision refuses the prompt in one line and the prompt comes back to
// the editor (nothing logged); a refused path keeps the text in the editor and sends nothing.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, test } from 'vitest'
import { waitFor } from '../../../test-support/harness.ts'
import { plainLines } from './support.ts'
import { appIdle, startApp, stopApps } from './app-harness.ts'

afterEach(stopApps)

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)
const screen = (app: Awaited<ReturnType<typeof startApp>>['app']) => plainLines(app.frame(100)).join('\n')

test('a model without vision refuses: one line, the prompt back in the editor, nothing logged or sent', async () => {
  const { app, keel, terminal } = await startApp([{ text: 'unused' }])
  writeFileSync(join(keel.cwd, 'shot.png'), PNG)
  terminal.type('what is @shot.png ')
  expect(app.editor.getText()).toBe(`what is [image shot.png ${PNG.length} B] `)
  terminal.type('\r')
  await waitFor(() => screen(app).includes('is not known to take images'), 'the refusal')
  await appIdle(app)
  expect(app.editor.getText()).toBe(`what is [image shot.png ${PNG.length} B]`)
  expect(keel.model.requests).toEqual([])
  expect(app.agent.session.events).toEqual([])
})

test('a path that is no image is one line, and the prompt is not sent', async () => {
  const { app, keel, terminal } = await startApp([{ text: 'unused' }])
  writeFileSync(join(keel.cwd, 'notes.png'), 'text')
  terminal.type('look at @notes.png')
  terminal.type('\r')
  await waitFor(() => screen(app).includes('notes.png is not a PNG, JPEG, GIF or WebP image'), 'the refusal')
  expect(app.editor.getText()).toBe('look at @notes.png')
  expect(keel.model.requests).toEqual([])
})
