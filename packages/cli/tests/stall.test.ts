// `keel -p` against a provider that goes silent mid-answer: the run ends with a one-line error and exit 1 instead of
// hanging. The idle timeout comes from the llm entry of a composition passed with --config.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { DEFAULT_COMPOSITION } from '@keel/cli'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-stall-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function composition(idleTimeoutMs: number): string {
  const base = readFileSync(DEFAULT_COMPOSITION, 'utf8')
  const changed = base
    .replace(/retryBaseDelayMs: \d+\n/, 'retryBaseDelayMs: 10\n')
    .replace(/idleTimeoutMs: \d+\n/, `idleTimeoutMs: ${idleTimeoutMs}\n`)
  expect(changed).not.toBe(base)
  const path = join(scratch, `idle-${idleTimeoutMs}.yml`)
  writeFileSync(path, changed)
  return path
}

function keel(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: scratch,
    env: { ...process.env, KEEL_HOME: join(scratch, 'home') },
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

describe('keel -p with a stalled provider', () => {
  test('a stall mid-answer ends the turn with a clear error (exit 1); a stall before the first byte is retried', async () => {
    const fake = await startFakeProvider([
      { stallBeforeHeaders: true },
      { text: 'Let me look. ', toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] },
      { text: 'The answer is half writ', stallAfter: 4 },
      { text: 'never requested' },
    ])
    try {
      const run = await keel([
        '-p',
        'answer me',
        '--model',
        'openai-compatible/m',
        '--base-url',
        `${fake.url}/v1`,
        '--config',
        composition(400),
        '--output-format',
        'json',
      ])
      expect(run.code, run.stderr).toBe(1)
      const result = JSON.parse(run.stdout)
      expect(result.reason).toBe('error')
      expect(fake.requests).toHaveLength(3)
      const tail = run.stderr.trim().split('\n').at(-1)!
      expect(run.stderr).toMatch(
        /openai-compatible: the stream stalled \(nothing received for 0\.40 s; idleTimeoutMs\)/,
      )
      expect(tail).not.toMatch(/^\s+at /) // no stack trace
    } finally {
      await fake.close()
    }
  })
})
