// The per-turn and per-key work images and job tools added: the registry's schemas with the `offeredWith` rule (every
// request) against serializing them, which every request does anyway; the TUI's attachment scan of the editor text
// (every key) against splitting the same text into words; the transcript fold of a prompt with an image against one
// without.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SessionEvent } from '@keel/session'
import { emptyTranscript, foldEvent } from '@keel/door/transcript'
import { Attachments } from '../packages/tui/src/attachments.ts'
import { makeKeel } from '../test-support/harness.ts'
import { median, ms, ratio, row } from './stats.ts'

const ROUNDS = 2000
function time(run: () => unknown): number {
  const samples: number[] = []
  for (let i = 0; i < 7; i++) {
    const started = performance.now()
    for (let j = 0; j < ROUNDS; j++) run()
    samples.push((performance.now() - started) / ROUNDS)
  }
  return median(samples)
}

// 1. What the model is offered, per request: 4 tools (bash and its job tools, todo_write), bash excluded or not.
{
  const keel = await makeKeel({ dev: false })
  const offered = keel.ctx.tools.schemas([])
  const serialize = time(() => JSON.stringify(offered))
  const schemas = time(() => keel.ctx.tools.schemas([]))
  const without = time(() => keel.ctx.tools.schemas(['bash']))
  row('JSON.stringify(schemas) (baseline)', ms(serialize))
  row('tools.schemas() with offeredWith', ms(schemas), ratio(schemas, serialize))
  row('tools.schemas(["bash"])', ms(without), ratio(without, serialize))
  await keel.dispose()
}

// 2. Per key in the TUI: a 2,000-character prompt with a finished @path to an image that is not there (refused once).
{
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-attach-'))
  writeFileSync(join(dir, 'x.txt'), '')
  const text = `${'fix the layout of the settings page and check the header '.repeat(35)}@missing.png and more`
  const attachments = new Attachments(() => dir)
  attachments.attach(text)
  const plain = time(() => text.split(/\s+/))
  const scan = time(() => attachments.attach(text))
  row('editor text split into words (baseline)', ms(plain))
  row('attachments.attach(editor text)', ms(scan), ratio(scan, plain))
  rmSync(dir, { recursive: true, force: true })
}

// 3. The fold of one prompt, with and without a 100 KB image.
{
  const prompt = (content: unknown[]) =>
    ({ type: 'user/message', seq: 1, time: 0, data: { message: { role: 'user', content } } }) as SessionEvent
  const text = prompt([{ type: 'text', text: 'what is wrong on this page?' }])
  const image = prompt([
    { type: 'text', text: 'what is wrong on this page?' },
    { type: 'image', mediaType: 'image/png', data: 'A'.repeat(136_000), name: 'shot.png' },
  ])
  const bare = time(() => foldEvent(emptyTranscript(), text))
  const withImage = time(() => foldEvent(emptyTranscript(), image))
  row('fold a text prompt (baseline)', ms(bare))
  row('fold a prompt with an image', ms(withImage), ratio(withImage, bare))
}
