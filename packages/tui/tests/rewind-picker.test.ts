// `/rewind` in the app on a recording terminal (real plugins, scripted model, no @keel/checkpoint): the picker
// escapes prompt text, says why the files cannot go back and offers the way back, and a conversation-only rewind
// continues in the fork with the prompt back in the editor.
import { afterEach, expect, test } from 'vitest'
import { waitFor } from '../../../test-support/harness.ts'
import { appIdle, startApp, stopApps } from './app-harness.ts'
import { plain } from './support.ts'
import { SETTLE_MS } from '../src/deliberate.ts'

afterEach(stopApps)

const ENTER = '\r'
const DOWN = '\x1b[B'

test('/rewind without checkpoints: files refused with a reason, conversation only forks and continues there', async () => {
  const { keel, app: a, terminal } = await startApp([{ text: 'first answer' }, { text: 'second answer' }])
  const idle = () => appIdle(a, 'the turn')
  /** What has been drawn since `from` (the terminal's own output, overlays included), colours removed. */
  const drawnSince = (from: number) => plain(terminal.output.slice(from))
  const waitDrawn = (from: number, text: string) =>
    waitFor(() => drawnSince(from).includes(text), `"${text}" on screen`, 10_000)

  a.submit('make it \x1b[31mred\x07')
  await idle()
  a.submit('again')
  await idle()
  const original = a.agent.id

  let mark = terminal.output.length
  a.submit('/rewind')
  await waitDrawn(mark, 'pick the prompt')
  await waitDrawn(mark, 'Turn 2')
  // The prompt's control characters are shown as symbols (␛, ␇), never sent to the terminal.
  expect(drawnSince(mark)).not.toContain('\x1b[31mred')
  expect(drawnSince(mark)).toMatch(/Turn 1\s+make it \u241b\[31mred\u2407/)

  await new Promise((done) => setTimeout(done, SETTLE_MS + 50)) // Enter counts after a pause in typing
  mark = terminal.output.length
  terminal.type(ENTER) // Turn 2, the latest
  await waitDrawn(mark, 'Conversation only')
  mark = terminal.output.length
  terminal.type(DOWN)
  terminal.type(ENTER) // Files only
  await waitDrawn(mark, 'rewinding files needs @keel/checkpoint')
  await waitDrawn(mark, 'Back')
  mark = terminal.output.length
  terminal.type(ENTER) // Back to the scopes
  await waitDrawn(mark, 'Files and conversation')
  mark = terminal.output.length
  terminal.type(DOWN)
  terminal.type(DOWN)
  terminal.type(ENTER) // Conversation only
  await waitDrawn(mark, 'The files stay as they are.')
  await waitDrawn(mark, 'continues in a new session')
  terminal.type(ENTER) // Rewind
  await waitFor(() => a.agent.id !== original, 'the fork to open', 10_000)

  expect(a.agent.session.header.forkedFrom).toMatchObject({ sessionId: original })
  expect(a.editor.getText()).toBe('again')
  const transcript = a.frame(100).map(plain).join('\n')
  expect(transcript).toContain('first answer')
  expect(transcript).not.toContain('second answer')
  expect(transcript.replace(/\s+/g, ' ')).toContain(
    `Continuing in session ${a.agent.id}, forked from ${original} before turn 2.`,
  )
  // Conversation only: nothing to put back, so no undo line; the original has no rewind recorded.
  expect(transcript).not.toContain('--undo')
  expect(keel.ctx.sessions.read(original).events.some((e) => e.type === 'checkpoint/restore')).toBe(false)
})
