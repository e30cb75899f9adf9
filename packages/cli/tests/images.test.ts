// `keel -p --image FILE` through the real binary against the strict fake: a vision model's request carries the
// image as its wire format documents it; a text-only model, a file that is no image, one too large or one missing
// is refused in one line (exit 2) and nothing is sent.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)

let scratch: string
let fake: FakeProvider
beforeEach(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'keel-images-'))
  mkdirSync(join(scratch, 'home'))
  writeFileSync(join(scratch, 'shot.png'), PNG)
  fake = await startFakeProvider([{ text: 'the button is cut off' }])
})
afterEach(async () => {
  await fake.close()
  rmSync(scratch, { recursive: true, force: true })
})

function keel(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), '-p', ...args], {
    cwd: scratch,
    env: {
      ...process.env,
      KEEL_HOME: join(scratch, 'home'),
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_BASE_URL: fake.url,
      DEEPSEEK_API_KEY: 'sk-ds-test',
    },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => {
    stdout += d
  })
  child.stderr.on('data', (d) => {
    stderr += d
  })
  child.stdin.end()
  return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })))
}

test('a vision model is sent the image with the prompt', async () => {
  const run = await keel(['--model', 'anthropic/claude-sonnet-4-5', '--image', 'shot.png', 'what is wrong here?'])
  expect(run.stderr).not.toContain('Error')
  expect(run.code).toBe(0)
  expect(run.stdout).toBe('the button is cut off\n')
  const content = fake.requests[0]!.body.messages[0].content.map(({ cache_control, ...block }: any) => block)
  expect(content).toEqual([
    { type: 'text', text: 'what is wrong here?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } },
  ])
  // On the log once, and shown by name when the session is read back.
  const id = /keel: session (\S+)/.exec(run.stderr)![1]!
  const shown = spawnSync(process.execPath, [join(root, 'bin/keel.js'), 'sessions', 'show', id], {
    cwd: scratch,
    env: { ...process.env, KEEL_HOME: join(scratch, 'home') },
    encoding: 'utf8',
  })
  expect(shown.stdout).toContain(`> what is wrong here?\n  [image shot.png ${PNG.length} B]`)
})

test('a text-only model refuses before the request', async () => {
  const run = await keel([
    '--model',
    'deepseek/deepseek-v4-flash',
    '--base-url',
    `${fake.url}/v1`,
    '--image',
    'shot.png',
    'what is wrong here?',
  ])
  expect(run.code).toBe(2)
  expect(run.stderr).toBe(
    'keel: deepseek/deepseek-v4-flash takes no images (the model catalog), so nothing was sent; use a vision model, or set "vision": true for it under "models" in settings\n',
  )
  expect(fake.requests).toEqual([])
})

test('not an image, 50 MB, or a missing path: one line, exit 2, nothing sent', async () => {
  writeFileSync(join(scratch, 'notes.png'), 'just text')
  writeFileSync(join(scratch, 'huge.png'), PNG)
  truncateSync(join(scratch, 'huge.png'), 50 * 1024 * 1024)
  const model = ['--model', 'anthropic/claude-sonnet-4-5']
  const lines = []
  for (const file of ['notes.png', 'huge.png', 'gone.png']) {
    const run = await keel([...model, '--image', file, 'look'])
    expect(run.code).toBe(2)
    lines.push(run.stderr)
  }
  expect(lines).toEqual([
    'keel: --image notes.png is not a PNG, JPEG, GIF or WebP image\n',
    'keel: --image huge.png is 50.0 MB, over the 3.6 MB limit for an image in a prompt\n',
    'keel: --image gone.png: no such file\n',
  ])
  expect(fake.requests).toEqual([])
})
