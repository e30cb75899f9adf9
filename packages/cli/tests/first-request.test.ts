// Print mode's first request, sent before the plugins boot (src/first-request.ts). In process: the request the
// agent builds takes over the one on its way only when it is the same; otherwise the early one is cancelled and the
// agent's sent. End to end: the second run of `keel -p` in a KEEL_HOME sends its request before cordis loads, and
// the run is otherwise the same; stored tools that went stale cost a request, not a wrong answer; a bad flag sends
// nothing.
import { execFileSync, spawn } from 'node:child_process'
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, test } from 'vitest'
import type { LlmRequest, StreamChunk, ToolSchema } from '@keel/llm'
import { writeChunkRecorder } from '../../../test-support/chunk-recorder.ts'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'
import { rememberTools, sendFirstRequest, toolsKey } from '../src/first-request.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-first-request-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const TOOLS: ToolSchema[] = [
  {
    name: 'read',
    description: 'Reads a file.',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
]

async function collect(stream: AsyncIterable<StreamChunk>): Promise<string> {
  let text = ''
  for await (const chunk of stream) if (chunk.type === 'text-delta') text += chunk.text
  return text
}

describe('in process', () => {
  const home = join(scratch, 'home-in-process')
  process.env.KEEL_HOME = home
  const key = toolsKey('test', undefined)
  rememberTools(key, TOOLS)
  const cwd = join(scratch, 'work')
  mkdirSync(cwd, { recursive: true })

  async function send(url: string, prompt = 'hi') {
    return sendFirstRequest({
      flags: { 'base-url': `${url}/v1` },
      cwd,
      spec: 'openai-compatible/m',
      prompt,
      overrides: undefined,
      toolsKey: key,
    })
  }

  /** The request the agent builds for a new session, as Agent.step does. */
  /** The request the agent builds for a new session, as Agent.step does: a fresh object with the same fields. */
  function agentRequest(first: { sessionId: string }, sent: LlmRequest): LlmRequest {
    return {
      system: sent.system,
      messages: structuredClone(sent.messages),
      tools: structuredClone(sent.tools),
      sessionId: first.sessionId,
    }
  }

  test('the request leaves at once, and the same request built later takes over its reply', async () => {
    const fake = await startFakeProvider([{ text: 'early reply' }])
    try {
      const first = await send(fake.url)
      expect(first).toBeDefined()
      await until(() => fake.requests.length === 1) // sent before anyone asked for a stream
      const body = fake.requests[0]!.body
      expect(body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(['read'])
      expect(body.messages.at(-1)).toMatchObject({ role: 'user' })
      const system: string = body.messages[0].content
      const sent: LlmRequest = {
        system,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }], source: 'user' }],
        tools: TOOLS,
      }
      const text = await collect(first!.model.stream(agentRequest(first!, sent), new AbortController().signal))
      expect(text).toBe('early reply')
      expect(fake.requests).toHaveLength(1)
    } finally {
      await fake.close()
    }
  })

  test('a different request cancels the early one, is sent itself, and its tools are kept for next time', async () => {
    const fake = await startFakeProvider([{ text: 'stale' }, { text: 'fresh' }])
    try {
      const first = await send(fake.url)
      const system: string = await waitForSystem(fake)
      const changedTools: ToolSchema[] = [{ ...TOOLS[0]!, description: 'Reads a file, now described better.' }]
      const request: LlmRequest = {
        system,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }], source: 'user' }],
        tools: changedTools,
        sessionId: first!.sessionId,
      }
      expect(await collect(first!.model.stream(request, new AbortController().signal))).toBe('fresh')
      expect(fake.requests).toHaveLength(2)
      expect(fake.requests[1]!.body.tools[0].function.description).toBe('Reads a file, now described better.')
      await new Promise((done) => setImmediate(done))
      const stored = JSON.parse(readFileSync(join(home, 'cache/first-request.json'), 'utf8'))
      expect(stored.tools).toEqual(changedTools)
      rememberTools(key, TOOLS)
    } finally {
      await fake.close()
    }
  })

  test('discard() and the agent cancelling its turn both close the early request', async () => {
    const bodies: { messages: { content: string }[] }[] = []
    const closed: number[] = []
    const server = createServer((req: IncomingMessage, res) => {
      // An openai-compatible adapter first asks GET /models for the context window (llm/src/server-models.ts).
      if (req.method === 'GET') return void res.writeHead(404).end()
      let raw = ''
      req.on('data', (chunk) => (raw += chunk))
      req.on('end', () => {
        const n = bodies.push(JSON.parse(raw))
        // Headers, then nothing: a model still thinking.
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.flushHeaders()
        res.on('close', () => closed.push(n))
      })
    })
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const discarded = await send(url)
      await until(() => bodies.length === 1)
      discarded!.discard()
      await until(() => closed.includes(1))

      const cancelled = await send(url)
      await until(() => bodies.length === 2)
      const request: LlmRequest = {
        system: bodies[1]!.messages[0]!.content,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }], source: 'user' }],
        tools: TOOLS,
        sessionId: cancelled!.sessionId,
      }
      const controller = new AbortController()
      const reading = collect(cancelled!.model.stream(request, controller.signal))
      setTimeout(() => controller.abort(new Error('cancelled')), 50)
      await expect(reading).rejects.toMatchObject({ kind: 'aborted' })
      await until(() => closed.includes(2))
      expect(bodies).toHaveLength(2) // taken over, not sent again
    } finally {
      server.closeAllConnections()
      await new Promise((done) => server.close(done))
    }
  })

  test('a FIFO, a link to /dev/zero or broken JSON where the stored tools belong is passed over at once, and replaced', async () => {
    const file = join(home, 'cache/first-request.json')
    for (const make of [
      () => execFileSync('mkfifo', [file]),
      () => symlinkSync('/dev/zero', file),
      () => writeFileSync(file, '{ not json'),
    ]) {
      rmSync(file, { force: true })
      make()
      expect(await send('http://127.0.0.1:9')).toBeUndefined() // reading either would hang or fill memory
      rememberTools(key, TOOLS)
      expect(lstatSync(file).isFile()).toBe(true)
    }
  })

  test('no early request without stored tools for this key, for a scripted model, or with MCP servers set', async () => {
    const fake = await startFakeProvider([])
    try {
      const base = { flags: { 'base-url': `${fake.url}/v1` }, cwd, prompt: 'hi', overrides: undefined }
      expect(await sendFirstRequest({ ...base, spec: 'openai-compatible/m', toolsKey: 'other' })).toBeUndefined()
      expect(await sendFirstRequest({ ...base, spec: 'scripted/demo', toolsKey: key })).toBeUndefined()
      const mcp = { mcp: { servers: { one: { command: 'x' } } } }
      expect(
        await sendFirstRequest({ ...base, spec: 'openai-compatible/m', toolsKey: key, overrides: mcp }),
      ).toBeUndefined()
      expect(
        await sendFirstRequest({
          ...base,
          flags: { ...base.flags, allow: ['bash(ls)'] },
          spec: 'openai-compatible/m',
          toolsKey: key,
        }),
      ).toBeUndefined()
      await new Promise((done) => setTimeout(done, 100))
      expect(fake.requests).toHaveLength(0)
    } finally {
      await fake.close()
    }
  })
})

/** The system prompt of the first request a fake provider received (OpenAI shape: the first message). */
async function waitForSystem(fake: { requests: { body: { messages: { content: string }[] } }[] }): Promise<string> {
  await until(() => fake.requests.length > 0)
  return fake.requests[0]!.body.messages[0]!.content
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((done) => setTimeout(done, 10))
  }
}

describe('end to end', () => {
  const home = join(scratch, 'home-e2e')
  const work = join(scratch, 'e2e-work')
  mkdirSync(work, { recursive: true })
  const recorder = writeChunkRecorder(scratch)
  // Beside the chunk recorder: a line when the first HTTP request has been written to its socket, all of it (made is
  // not enough: a request made and then held behind a busy event loop reaches the server no sooner).
  const requestMark = join(scratch, 'request-mark.cjs')
  writeFileSync(
    requestMark,
    `const http = require('node:http')
const { appendFileSync } = require('node:fs')
const request = http.request
let marked = false
http.request = function (...args) {
  const made = request.apply(this, args)
  if (!marked && process.env.KEEL_CHUNK_LIST)
    made.once('finish', () => appendFileSync(process.env.KEEL_CHUNK_LIST, 'REQUEST\\n'))
  marked = true
  return made
}
`,
  )

  /** Runs `keel -p`; returns its output, and the chunks it loaded in order with `REQUEST` where the request left. */
  async function printRun(url: string, extra: string[] = []) {
    const list = join(scratch, `chunks-${Math.random().toString(36).slice(2)}.txt`)
    writeFileSync(list, '')
    const child = spawn(
      process.execPath,
      [
        `--require=${recorder}`,
        `--require=${requestMark}`,
        join(root, 'bin/keel.js'),
        '-p',
        'say hi',
        '--model',
        'openai-compatible/m',
        '--base-url',
        `${url}/v1`,
        ...extra,
      ],
      { cwd: work, env: { ...process.env, KEEL_HOME: home, KEEL_CHUNK_LIST: list }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const code = await new Promise((done) => child.on('close', done))
    const order = readFileSync(list, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => (line === 'REQUEST' ? line : fileURLToPath(line.split(' ')[0]!)))
    return { code, stdout, stderr, order }
  }

  /** Where the request left among the chunks: before or after the first chunk holding cordis. */
  function requestBeforeCordis(order: string[]): boolean {
    const request = order.indexOf('REQUEST')
    const cordis = order.findIndex(
      (path) => path !== 'REQUEST' && readFileSync(path, 'utf8').includes('//! node_modules/@cordisjs/core/'),
    )
    expect(request, 'no HTTP request was made').toBeGreaterThanOrEqual(0)
    expect(cordis, 'the run did not use the bundle').toBeGreaterThanOrEqual(0)
    return request < cordis
  }

  const sessionFiles = () =>
    readdirSync(join(home, 'sessions'), { recursive: true }).filter((f) => String(f).endsWith('.jsonl'))

  test('the second run sends its first request before cordis loads, the same request, and ends the same way', async () => {
    const fake = await startFakeProvider([{ text: 'first answer' }, { text: 'second answer' }])
    try {
      const one = await printRun(fake.url)
      expect(one.code, one.stderr).toBe(0)
      expect(one.stdout).toBe('first answer\n')
      expect(requestBeforeCordis(one.order), 'a run without stored tools booted first').toBe(false)
      const two = await printRun(fake.url)
      expect(two.code, two.stderr).toBe(0)
      expect(two.stdout).toBe('second answer\n')
      expect(requestBeforeCordis(two.order), 'the second run booted before sending').toBe(true)
      expect(fake.requests).toHaveLength(2)
      expect(fake.requests[1]!.body).toEqual(fake.requests[0]!.body)
      // Its session is an ordinary one: the user message, the answer, the turn closed.
      expect(sessionFiles()).toHaveLength(2)
      const id = /keel: session (\S+)/.exec(two.stderr)![1]!
      const file = sessionFiles().find((f) => String(f).includes(id))!
      const types = readFileSync(join(home, 'sessions', String(file)), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).type)
      expect(types).toEqual(expect.arrayContaining(['turn/start', 'user/message', 'assistant/message', 'turn/end']))
    } finally {
      await fake.close()
    }
  }, 60_000)

  test('stored tools that went stale: the early request is dropped, the right one answers, the store is mended', async () => {
    const file = join(home, 'cache/first-request.json')
    const stored = JSON.parse(readFileSync(file, 'utf8'))
    const real = structuredClone(stored.tools)
    stored.tools[0].description = 'an older description'
    writeFileSync(file, JSON.stringify(stored))
    const fake = await startFakeProvider([{ text: 'from the stale request' }, { text: 'from the right one' }])
    try {
      const run = await printRun(fake.url)
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toBe('from the right one\n')
      expect(fake.requests).toHaveLength(2)
      expect(fake.requests[0]!.body.tools[0].function.description).toBe('an older description')
      expect(fake.requests[1]!.body.tools[0].function.description).toBe(real[0].description)
      expect(JSON.parse(readFileSync(file, 'utf8')).tools).toEqual(real)
    } finally {
      await fake.close()
    }
  }, 60_000)

  test('a bad --mode is refused before anything is sent', async () => {
    const fake = await startFakeProvider([{ text: 'never' }])
    try {
      const run = await printRun(fake.url, ['--mode', 'sideways'])
      expect(run.code).toBe(2)
      expect(run.stderr).toContain('--mode must be one of')
      expect(fake.requests).toHaveLength(0)
    } finally {
      await fake.close()
    }
  }, 60_000)
})

describe('a full disk', () => {
  test.skipIf(skipWithout('bubblewrap', HAS_BWRAP, 'the full-disk start'))(
    'a run whose cache write fails on a full disk leaves no temporary file in $KEEL_HOME/cache',
    async () => {
      const home = join(scratch, 'home-full')
      const work = join(scratch, 'work-full')
      mkdirSync(join(home, 'cache'), { recursive: true })
      mkdirSync(work, { recursive: true })
      const fake = await startFakeProvider([{ text: 'hi' }])
      try {
        // The cache folder is a tmpfs of one page: the tools (about 20 KB) do not fit, the session log does.
        const script = `${process.execPath} ${join(root, 'bin/keel.js')} -p 'say hi' --model openai-compatible/m --base-url ${fake.url}/v1; echo "exit=$?"; ls -A ${home}/cache`
        // Spawned, not run synchronously: the fake provider answers from this process's event loop.
        const child = spawn(
          'bwrap',
          [
            '--dev-bind',
            '/',
            '/',
            '--size',
            '4096',
            '--tmpfs',
            join(home, 'cache'),
            '--chdir',
            work,
            'sh',
            '-c',
            script,
          ],
          { env: { ...process.env, KEEL_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] },
        )
        let output = ''
        child.stdout.on('data', (chunk) => (output += chunk))
        await new Promise((done) => child.on('close', done))
        expect(fake.requests.length).toBeGreaterThan(0)
        expect(output.split('\n').filter(Boolean)).toEqual(['hi', 'exit=0'])
      } finally {
        await fake.close()
      }
    },
    60_000,
  )
})
