// A server config error reaches every door (issue 33): print mode with an OpenAI-compatible model (whose first
// request takes a fast path) and keel serve, which starts no agent until a page prompts. Real binary, fake provider.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'
import { waitFor } from '../../../test-support/harness.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-mcp-notices-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const line = 'keel: mcp server files: env.DATA_DIR uses ${KEEL_TEST_UNSET_MCP_VAR}, which is not set'

function folder() {
  const dir = mkdtempSync(join(scratch, 'run-'))
  const home = join(dir, 'home')
  const cwd = join(dir, 'cwd')
  mkdirSync(home)
  mkdirSync(cwd)
  writeFileSync(
    join(home, 'settings.json'),
    JSON.stringify({
      mcpServers: {
        files: { command: process.execPath, args: ['-e', '0'], env: { DATA_DIR: '${KEEL_TEST_UNSET_MCP_VAR}' } },
      },
    }),
  )
  return { home, cwd }
}

function keel(args: string[], run: { home: string; cwd: string }) {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: run.cwd,
    env: { ...process.env, KEEL_HOME: run.home, KEEL_MODE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const out = { stdout: '', stderr: '', status: undefined as number | null | undefined }
  child.stdout.on('data', (chunk) => (out.stdout += chunk))
  child.stderr.on('data', (chunk) => (out.stderr += chunk))
  const closed = new Promise<void>((done) =>
    child.on('close', (status) => {
      out.status = status
      done()
    }),
  )
  return { child, out, closed }
}

test('print mode with an OpenAI-compatible model says the config error on stderr, once', async () => {
  const fake = await startFakeProvider([{ text: 'the answer' }])
  try {
    const run = keel(['-p', 'go', '--model', 'openai-compatible/m', '--base-url', `${fake.url}/v1`], folder())
    await run.closed
    expect(run.out.status, run.out.stderr).toBe(0)
    expect(run.out.stdout).toBe('the answer\n')
    expect(run.out.stderr.split('\n').filter((l) => l === line)).toHaveLength(1)
  } finally {
    await fake.close()
  }
})

test('keel serve says it at start, before any prompt', async () => {
  const fake = await startFakeProvider([])
  const run = keel(['serve', '--port', '0', '--model', 'openai-compatible/m', '--base-url', `${fake.url}/v1`], folder())
  try {
    await waitFor(() => run.out.stderr.includes(line), 'the MCP notice on stderr', 60_000)
    expect(fake.requests).toHaveLength(0)
  } finally {
    run.child.kill('SIGTERM')
    await run.closed
    await fake.close()
  }
}, 90_000)
