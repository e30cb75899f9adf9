// Images through `keel acp` as an editor sends them (the SDK's client over stdio): a vision model's request
// carries the image; a text-only model refuses the prompt in one line before any request.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { methods, ndJsonStream, type RequestError } from '@agentclientprotocol/sdk'
import { startFakeProvider, type FakeProvider } from '../../../test-support/fake-provider.ts'
import { initialize, testClient } from './support.ts'

const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

let root: string
let fake: FakeProvider
const children: ReturnType<typeof spawn>[] = []
beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'keel-acp-images-'))
  mkdirSync(join(root, 'work'))
  fake = await startFakeProvider([{ text: 'a red square' }])
})
afterEach(async () => {
  // The client hangs up and the bridge exits on its own, with its checkpoint git done: a SIGKILL left that git
  // writing the shadow while the folder was removed (ENOTEMPTY under load). SIGKILL only if it does not exit.
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue
    const exited = new Promise((done) => child.once('exit', done))
    child.stdin!.end()
    const stuck = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(stuck)
  }
  await fake.close()
  rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 })
})

function acp(...args: string[]) {
  const child = spawn(process.execPath, [join(REPO, 'bin/keel.js'), 'acp', '--model', ...args], {
    cwd: join(root, 'work'),
    env: {
      ...process.env,
      KEEL_HOME: join(root, 'home'),
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_BASE_URL: fake.url,
      DEEPSEEK_API_KEY: 'sk-ds-test',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  children.push(child)
  const fromChild = new ReadableStream<Uint8Array>({
    start(controller) {
      child.stdout!.on('data', (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)))
      child.stdout!.on('end', () => controller.close())
    },
  })
  const toChild = new WritableStream<Uint8Array>({
    write: (chunk) => new Promise<void>((done) => child.stdin!.write(chunk, () => done())),
  })
  return testClient(ndJsonStream(toChild, fromChild))
}

const prompt = [
  { type: 'text' as const, text: 'what is in this screenshot?' },
  { type: 'image' as const, data: PNG, mimeType: 'image/png', uri: 'file:///tmp/shot.png' },
]

it('a vision model is sent the image block', { timeout: 60_000 }, async () => {
  const client = acp('anthropic/claude-sonnet-4-5')
  const init = await initialize(client)
  expect(init.agentCapabilities?.promptCapabilities?.image).toBe(true)
  const { sessionId } = await client.connection.agent.request(methods.agent.session.new, {
    cwd: join(root, 'work'),
    mcpServers: [],
  })
  const response = (await client.connection.agent.request(methods.agent.session.prompt, { sessionId, prompt })) as {
    stopReason: string
  }
  expect(response.stopReason).toBe('end_turn')
  const content = fake.requests[0]!.body.messages[0].content.map(({ cache_control, ...block }: any) => block)
  expect(content).toEqual([
    { type: 'text', text: 'what is in this screenshot?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
  ])
})

it('a text-only model refuses the prompt before the request', { timeout: 60_000 }, async () => {
  const client = acp('deepseek/deepseek-v4-flash', '--base-url', `${fake.url}/v1`)
  await initialize(client)
  const { sessionId } = await client.connection.agent.request(methods.agent.session.new, {
    cwd: join(root, 'work'),
    mcpServers: [],
  })
  const error = (await client.connection.agent.request(methods.agent.session.prompt, { sessionId, prompt }).then(
    () => undefined,
    (e: unknown) => e,
  )) as RequestError
  expect(error.code).toBe(-32602)
  expect(error.message).toContain('deepseek/deepseek-v4-flash takes no images (the model catalog), so nothing was sent')
  expect(fake.requests).toEqual([])
})
