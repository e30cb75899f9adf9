// The incoming size limit: an oversized message is refused with a JSON-RPC error naming its id, and the connection
// goes on. Unit tests of the line limiter, then `keel acp` over real stdio with a 33 MiB prompt.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { PROTOCOL_VERSION } from '@agentclientprotocol/sdk'
import { limitLines, MAX_MESSAGE_BYTES, TopLevelScanner, type RefusedMessage } from '../src/limit.ts'

const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const encoder = new TextEncoder()

/** Feeds `chunks` through the limiter; returns what passed (as text) and what was refused. */
async function through(chunks: string[], max: number): Promise<{ passed: string; refused: RefusedMessage[] }> {
  const refused: RefusedMessage[] = []
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk))
      controller.close()
    },
  })
  let passed = ''
  const decoder = new TextDecoder()
  for await (const bytes of limitLines(source, max, (message) =>
    refused.push(message),
  ) as unknown as AsyncIterable<Uint8Array>)
    passed += decoder.decode(bytes, { stream: true })
  return { passed, refused }
}

function scan(text: string, pieces = 1): TopLevelScanner {
  const scanner = new TopLevelScanner()
  const bytes = encoder.encode(text)
  const size = Math.ceil(bytes.length / pieces)
  for (let i = 0; i < bytes.length; i += size) scanner.feed(bytes.subarray(i, i + size))
  return scanner
}

describe('limitLines', () => {
  it('passes lines within the limit unchanged, across chunk boundaries', async () => {
    const { passed, refused } = await through(['{"id":1}\n{"id"', ':2}\n', '{"id":3}'], 20)
    expect(passed).toBe('{"id":1}\n{"id":2}\n{"id":3}')
    expect(refused).toEqual([])
  })

  it('drops a line over the limit, reports its id and method, and keeps the lines around it', async () => {
    const big = `{"jsonrpc":"2.0","method":"session/prompt","params":{"text":"${'x'.repeat(200)}"},"id":"req-7"}`
    const { passed, refused } = await through(
      ['{"id":1}\n', big.slice(0, 50), big.slice(50, 120), `${big.slice(120)}\n{"id":2}\n`],
      100,
    )
    expect(passed).toBe('{"id":1}\n{"id":2}\n')
    expect(refused).toEqual([{ bytes: big.length, id: 'req-7', method: 'session/prompt' }])
  })

  it('tells a notification (no id) and an unreadable line apart, also at the end of input without a newline', async () => {
    const notification = `{"jsonrpc":"2.0","method":"session/cancel","params":{"pad":"${'y'.repeat(100)}"}}`
    const garbage = 'z'.repeat(150)
    const { passed, refused } = await through([`${notification}\n`, garbage], 100)
    expect(passed).toBe('')
    expect(refused).toEqual([{ bytes: notification.length, method: 'session/cancel' }, { bytes: 150 }])
  })
})

describe('TopLevelScanner', () => {
  it('finds the top-level id wherever it is, ignoring ids nested in params and inside strings', () => {
    const text = '{"params":{"id":"nested","text":"\\"id\\": 99, {[","list":[{"id":5}]},"method":"m\\u0041","id":42}'
    for (const pieces of [1, 3, text.length]) {
      const scanner = scan(text, pieces)
      expect(scanner).toMatchObject({ hasId: true, id: 42, method: 'mA' })
    }
    expect(scan('{"id":null,"method":"x"}')).toMatchObject({ hasId: true, id: null })
    expect(scan('{"id" : "a b" , "x":1}')).toMatchObject({ hasId: true, id: 'a b' })
    expect(scan('{"method":"session/cancel","params":{}}').hasId).toBe(false)
    expect(scan('[1,2,3]').hasId).toBe(false)
  })
})

describe('keel acp with an oversized message', { timeout: 120_000 }, () => {
  it('answers it with a JSON-RPC error for its id, says so on stderr, and keeps serving', async () => {
    const home = mkdtempSync(join(tmpdir(), 'keel-acp-limit-'))
    try {
      const child = spawn(process.execPath, [join(REPO, 'bin/keel.js'), 'acp', '--model', 'scripted/plan'], {
        cwd: home,
        env: { ...process.env, KEEL_HOME: home, KEEL_DEV: '1' },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8')
      })
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8')
      })
      child.stdin.on('error', () => {})
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
      const responses = () =>
        stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { id?: unknown; result?: any; error?: any })
      const answered = async (id: number) => {
        while (!responses().some((message) => message.id === id)) {
          if (child.exitCode !== null)
            throw new Error(`keel acp exited ${child.exitCode} before answering ${id}\n${stderr}`)
          await new Promise((done) => setTimeout(done, 20))
        }
        return responses().find((message) => message.id === id)!
      }
      const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`)

      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} },
      })
      expect((await answered(1)).result).toBeDefined()
      // 33 MiB of prompt text, its id after the params (so it is read at the end of the stream), written in pieces.
      const text = 'a'.repeat(MAX_MESSAGE_BYTES + 1024 * 1024)
      child.stdin.write(
        `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"${text}"}]},"id":2}\n`,
      )
      const refusal = await answered(2)
      expect(refusal.error).toMatchObject({
        code: -32600,
        message: expect.stringMatching(
          /^message too large: \d+ bytes \(keel acp accepts at most 33554432 bytes per message\)$/,
        ),
      })
      expect(stderr).toMatch(
        /keel acp: refused a message of \d+ bytes \(session\/prompt\): the limit is 33554432 bytes/,
      )

      // Still serving: a new session works.
      send({ jsonrpc: '2.0', id: 3, method: 'session/new', params: { cwd: home, mcpServers: [] } })
      expect((await answered(3)).result?.sessionId).toEqual(expect.any(String))
      child.stdin.end()
      expect(await exited).toBe(0)
      for (const line of stdout.split('\n').filter(Boolean)) expect(JSON.parse(line).jsonrpc).toBe('2.0')
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
