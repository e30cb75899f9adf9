// Extra request headers per provider (issue 33): a gateway such as Portkey routes by header, so without them
// Keel cannot use it. Through the real binary against the fake provider in Portkey's strict mode. A project's
// headers are held back until the folder is trusted, like its baseUrl: they could send the person's key elsewhere.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-headers-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let counter = 0
function folder(settings?: { user?: object; project?: object }) {
  const dir = join(scratch, `run-${++counter}`)
  const cwd = join(dir, 'cwd')
  const home = join(dir, 'home')
  mkdirSync(join(cwd, '.keel'), { recursive: true })
  mkdirSync(home, { recursive: true })
  if (settings?.user) writeFileSync(join(home, 'settings.json'), JSON.stringify(settings.user))
  if (settings?.project) writeFileSync(join(cwd, '.keel', 'settings.json'), JSON.stringify(settings.project))
  return { cwd, home }
}

function keel(args: string[], run: { cwd: string; home: string }, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: run.cwd,
    env: { ...process.env, KEEL_HOME: run.home, KEEL_MODE: '', KEEL_API_KEY: 'sk-gw', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((done) =>
    child.on('close', (status) => done({ status, stdout, stderr })),
  )
}

const headers = { 'x-portkey-provider': 'openai', 'x-portkey-api-key': '${PORTKEY_TEST_KEY}' }
const providers = { providers: { 'openai-compatible': { headers } } }

test('the settings headers are sent, ${VAR} filled from the environment, Keel keeps its own key header', async () => {
  const fake = await startFakeProvider([{ text: 'through the gateway' }], { portkey: true })
  try {
    const args = ['-p', 'hi', '--model', 'openai-compatible/gpt-x', '--base-url', `${fake.url}/v1`]
    const bare = await keel(args, folder())
    expect(bare.status).not.toBe(0)
    expect(bare.stderr).toContain('Either x-portkey-config or x-portkey-provider header is required')

    const ran = await keel(args, folder({ user: providers }), { PORTKEY_TEST_KEY: 'pk-secret' })
    expect(ran.status, ran.stderr).toBe(0)
    expect(ran.stdout).toContain('through the gateway')
    const sent = fake.requests.at(-1)!.headers
    expect(sent['x-portkey-provider']).toBe('openai')
    expect(sent['x-portkey-api-key']).toBe('pk-secret')
    expect(sent.authorization).toBe('Bearer sk-gw')
  } finally {
    await fake.close()
  }
})

test("an untrusted project's headers are held back like its baseUrl; --trust applies them", async () => {
  const fake = await startFakeProvider([{ text: 'trusted now' }], { portkey: true })
  try {
    const args = ['-p', 'hi', '--model', 'openai-compatible/gpt-x', '--base-url', `${fake.url}/v1`]
    const run = folder({ project: providers })
    const env = { PORTKEY_TEST_KEY: 'pk-secret' }
    const untrusted = await keel(args, run, env)
    expect(untrusted.status).not.toBe(0)
    expect(untrusted.stderr).toMatch(/is not trusted.*providers/)
    expect(untrusted.stderr).toContain('Either x-portkey-config or x-portkey-provider header is required')
    const trusted = await keel([...args, '--trust'], run, env)
    expect(trusted.status, trusted.stderr).toBe(0)
    expect(fake.requests.at(-1)!.headers['x-portkey-provider']).toBe('openai')
  } finally {
    await fake.close()
  }
})

test.each([
  [
    { 'x-portkey-api-key': '${PORTKEY_UNSET_VAR}' },
    'providers.openai-compatible.headers.x-portkey-api-key: uses ${PORTKEY_UNSET_VAR}, which is not set',
  ],
  [
    { Authorization: 'Bearer other' },
    'providers.openai-compatible.headers.Authorization: Authorization is set by Keel itself',
  ],
  [{ 'bad name': 'x' }, 'providers.openai-compatible.headers.bad name: "bad name" is not a valid header name'],
])('a header that cannot be sent is one line naming the file and the key: %j', async (bad, line) => {
  const run = folder({ user: { providers: { 'openai-compatible': { headers: bad } } } })
  const out = await keel(['-p', 'hi', '--model', 'openai-compatible/gpt-x', '--base-url', 'http://127.0.0.1:9/v1'], run)
  expect(out.status).toBe(2)
  expect(out.stderr).toContain(`${join(run.home, 'settings.json')}: ${line}`)
  expect(out.stderr.trim().split('\n')).toHaveLength(1)
})

test('an unknown provider name is refused with a guess', async () => {
  const run = folder({ user: { providers: { 'openai-compatibel': { headers: {} } } } })
  const out = await keel(['config'], run)
  expect(out.status).toBe(2)
  expect(out.stderr).toContain(
    'unknown provider providers.openai-compatibel (did you mean providers.openai-compatible?)',
  )
})
