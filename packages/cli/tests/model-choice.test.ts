// keel -c / -r reopen a session on its last /model choice (`session/model`), unless --model is typed.
import { spawnSync } from 'node:child_process'
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-model-choice-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const home = join(scratch, 'home')

function keel(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: scratch,
    env: { ...process.env, KEEL_HOME: home, KEEL_MODEL: '', ...env },
    encoding: 'utf8',
    input: '',
    timeout: 120_000,
  })
}

function script(name: string, text: string): string {
  writeFileSync(join(scratch, `${name}.json`), JSON.stringify({ steps: [{ text }, { text: `${text} again` }] }))
  return `scripted/${name}.json`
}

/** The one session file under KEEL_HOME. */
function sessionFile(): string {
  const dir = join(home, 'sessions')
  for (const slug of readdirSync(dir)) {
    const file = readdirSync(join(dir, slug)).find((name) => name.endsWith('.jsonl'))
    if (file) return join(dir, slug, file)
  }
  throw new Error('no session file')
}

test('the last session/model wins over $KEEL_MODEL and the default; a typed --model wins over it', () => {
  const first = script('first', 'from the first script')
  const chosen = script('chosen', 'from the chosen script')
  const started = keel(['-p', 'hello', '--model', first])
  expect(started.status, started.stderr).toBe(0)
  expect(started.stdout).toContain('from the first script')
  // What /model writes between turns (Agent.switchModel), appended as the TUI would have.
  const file = sessionFile()
  const seq = readFileSync(file, 'utf8').trim().split('\n').length - 1
  appendFileSync(file, `${JSON.stringify({ type: 'session/model', seq, time: Date.now(), data: { spec: chosen } })}\n`)

  // No --model: the session's choice, even with $KEEL_MODEL naming another.
  const continued = keel(['-c', '-p', 'next', '--output-format', 'json'], { KEEL_MODEL: first, KEEL_DEV: '1' })
  expect(continued.status, continued.stderr).toBe(0)
  const answer = JSON.parse(continued.stdout) as { text: string; model: string }
  expect(answer.text).toBe('from the chosen script')
  // Print mode reports the model in use, not the one the flags and environment name.
  expect(answer.model).toBe(chosen)

  // --model typed: it wins.
  const overridden = keel(['-c', '-p', 'again', '--model', first])
  expect(overridden.status, overridden.stderr).toBe(0)
  expect(overridden.stdout).toContain('from the first script')
})

/** keel in `cwd`, without blocking the event loop (a fake provider in this process answers it). */
async function keelIn(cwd: string, args: string[], env: Record<string, string> = {}) {
  const { spawn } = await import('node:child_process')
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home, KEEL_MODEL: '', DEEPSEEK_API_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => {
    stdout += d
  })
  child.stderr.on('data', (d) => {
    stderr += d
  })
  const status = await new Promise<number | null>((done) => child.on('close', done))
  return { status, stdout, stderr }
}

test('a session keeps the model and base URL it started with: -c with no --model continues on them and says so', async () => {
  const kept = `scripted/${join(scratch, script('kept', 'from the kept script').slice('scripted/'.length))}`
  const dir = mkdtempSync(join(scratch, 'kept-'))
  const started = await keelIn(dir, ['-p', 'hi', '--model', kept])
  expect(started.status, started.stderr).toBe(0)
  // No DEEPSEEK_API_KEY and no --model: the log's model, not the default provider.
  const continued = await keelIn(dir, ['-p', 'again', '-c', '--output-format', 'json'])
  expect(continued.status, continued.stderr).toBe(0)
  const answer = JSON.parse(continued.stdout) as { text: string; model: string; sessionId: string }
  expect(answer.text).toBe('from the kept script')
  expect(answer.model).toBe(kept)
  expect(continued.stderr).toContain(`keel: continuing session ${answer.sessionId} on ${kept}`)

  // A server named by --base-url: the continued turn goes to the same server.
  const { startFakeProvider } = await import('../../../test-support/fake-provider.ts')
  const fake = await startFakeProvider([{ text: 'first answer' }, { text: 'second answer' }])
  try {
    const served = mkdtempSync(join(scratch, 'served-'))
    const flags = ['--model', 'openai-compatible/test-model', '--base-url', `${fake.url}/v1`]
    const one = await keelIn(served, ['-p', 'hi', ...flags], { OPENAI_API_KEY: 'sk-test' })
    expect(one.status, one.stderr).toBe(0)
    const two = await keelIn(served, ['-p', 'again', '-c'], { OPENAI_API_KEY: 'sk-test' })
    expect(two.status, two.stderr).toBe(0)
    expect(two.stdout).toBe('second answer\n')
    expect(fake.requests).toHaveLength(2)
    expect((fake.requests[1]!.body as { model: string }).model).toBe('test-model')
  } finally {
    await fake.close()
  }
}, 120_000)
