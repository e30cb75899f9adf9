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
