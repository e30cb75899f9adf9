// Streamable HTTP: a server built with the SDK on 127.0.0.1 inside the test; headers with ${VAR} from the
// environment reach it; the older SSE transport is reached with `type: 'sse'`.
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { afterEach, describe, expect, test } from 'vitest'
import { z } from 'zod'
import { bootMcp, textOf, type Booted } from './support.ts'

let booted: Booted | undefined
let server: Server | undefined
afterEach(async () => {
  await booted?.stop()
  booted = undefined
  server?.closeAllConnections()
  await new Promise((done) => (server ? server.close(done) : done(undefined)))
  server = undefined
})

function mcpServer(seen: { auth?: string }): McpServer {
  const mcp = new McpServer({ name: 'notes', version: '1.0.0' })
  mcp.registerTool(
    'lookup',
    { description: 'Looks a word up.', inputSchema: { word: z.string() } },
    async ({ word }, extra) => ({
      content: [{ type: 'text', text: `${word}: a note (auth ${seen.auth ?? 'none'})` }],
      ...(extra ? {} : {}),
    }),
  )
  mcp.registerTool('wait', { description: 'Never answers.' }, () => new Promise(() => {}))
  return mcp
}

/** Streamable HTTP at /mcp (stateful sessions), SSE at /sse + /messages; remembers the Authorization header. */
async function listen(port = 0): Promise<{ url: string; seen: { auth?: string } }> {
  const seen: { auth?: string } = {}
  const streams = new Map<string, StreamableHTTPServerTransport>()
  const sse = new Map<string, SSEServerTransport>()
  server = createServer(async (req: IncomingMessage, res) => {
    seen.auth = req.headers.authorization
    const url = new URL(req.url!, 'http://127.0.0.1')
    if (url.pathname === '/mcp') {
      const id = req.headers['mcp-session-id'] as string | undefined
      let transport = id ? streams.get(id) : undefined
      if (!transport) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => {
            streams.set(sid, transport!)
          },
        })
        await mcpServer(seen).connect(transport)
      }
      await transport.handleRequest(req, res)
    } else if (url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res)
      sse.set(transport.sessionId, transport)
      await mcpServer(seen).connect(transport)
    } else if (url.pathname === '/messages') {
      await sse.get(url.searchParams.get('sessionId') ?? '')?.handlePostMessage(req, res)
    } else {
      res.writeHead(404).end()
    }
  })
  await new Promise<void>((done) => server!.listen(port, '127.0.0.1', done))
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen }
}

describe('remote servers', () => {
  test('streamable HTTP: tools listed and called, with headers expanded from the environment', async () => {
    const { url } = await listen()
    process.env.KEEL_TEST_MCP_TOKEN = 'sekrit'
    try {
      booted = await bootMcp({
        servers: { notes: { url: `${url}/mcp`, headers: { Authorization: 'Bearer ${KEEL_TEST_MCP_TOKEN}' } } },
      })
      await booted.ctx.mcp.ready(process.cwd())
    } finally {
      delete process.env.KEEL_TEST_MCP_TOKEN
    }
    expect(booted.ctx.mcp.status()).toMatchObject([
      { name: 'notes', transport: 'http', state: 'ready', tools: ['mcp__notes__lookup', 'mcp__notes__wait'] },
    ])
    const result = await booted.ctx.tools.execute({
      callId: 'c',
      name: 'mcp__notes__lookup',
      arguments: '{"word":"keel"}',
      signal: new AbortController().signal,
    })
    expect(textOf(result)).toBe('keel: a note (auth Bearer sekrit)')
  })

  test('the SSE transport with type: "sse"', async () => {
    const { url } = await listen()
    booted = await bootMcp({ servers: { notes: { type: 'sse', url: `${url}/sse` } } })
    await booted.ctx.mcp.ready(process.cwd())
    expect(booted.ctx.mcp.status()).toMatchObject([{ name: 'notes', transport: 'sse', state: 'ready' }])
    const result = await booted.ctx.tools.execute({
      callId: 'c',
      name: 'mcp__notes__lookup',
      arguments: '{"word":"sail"}',
      signal: new AbortController().signal,
    })
    expect(textOf(result)).toContain('sail: a note')
  })

  test('a header naming an unset variable is a warning naming it, and the server is not contacted', async () => {
    const { url, seen } = await listen()
    booted = await bootMcp({
      servers: { notes: { url: `${url}/mcp`, headers: { Authorization: 'Bearer ${KEEL_TEST_UNSET_VAR}' } } },
    })
    await booted.ctx.mcp.ready(process.cwd())
    expect(booted.warnings).toEqual([
      'mcp server notes: headers.Authorization uses ${KEEL_TEST_UNSET_VAR}, which is not set',
    ])
    expect(seen.auth).toBeUndefined()
    expect(booted.ctx.tools.names()).toEqual([])
  })

  test('a URL where nothing listens fails to start with one warning', async () => {
    const { url } = await listen()
    const port = new URL(url).port
    server!.close()
    server = undefined
    booted = await bootMcp({ servers: { gone: { url: `http://127.0.0.1:${port}/mcp` } }, startTimeoutMs: 5000 })
    await booted.ctx.mcp.ready(process.cwd())
    expect(booted.ctx.mcp.status()[0]!.state).toBe('failed')
    expect(booted.warnings[0]).toMatch(/^mcp server gone failed to start: /)
  })

  const lookup = (b: Booted, word: string, signal = new AbortController().signal) =>
    b.ctx.tools.execute({ callId: 'c', name: 'mcp__notes__lookup', arguments: JSON.stringify({ word }), signal })

  async function stopServer() {
    server!.closeAllConnections()
    await new Promise((done) => server!.close(done))
    server = undefined
  }

  test('a server that restarted (its sessions gone) is initialized again, and the call goes through', async () => {
    const { url } = await listen()
    booted = await bootMcp({ servers: { notes: { url: `${url}/mcp` } } })
    await booted.ctx.mcp.ready(process.cwd())
    expect(textOf(await lookup(booted, 'one'))).toContain('one: a note')
    await stopServer()
    await listen(Number(new URL(url).port))
    const again = await lookup(booted, 'two')
    expect(again.isError, textOf(again)).toBe(false)
    expect(textOf(again)).toContain('two: a note')
    expect(booted.ctx.mcp.status()[0]).toMatchObject({
      state: 'ready',
      tools: ['mcp__notes__lookup', 'mcp__notes__wait'],
    })
  })

  test('a server that dies mid-call fails the call at once saying so; keel mcp list says failed; it comes back', async () => {
    const { url } = await listen()
    booted = await bootMcp({ servers: { notes: { url: `${url}/mcp` } }, callTimeoutMs: 60_000 })
    await booted.ctx.mcp.ready(process.cwd())
    const started = Date.now()
    const waiting = booted.ctx.tools.execute({
      callId: 'w',
      name: 'mcp__notes__wait',
      arguments: '{}',
      signal: new AbortController().signal,
    })
    await new Promise((done) => setTimeout(done, 300))
    await stopServer()
    const died = await waiting
    expect(Date.now() - started).toBeLessThan(20_000)
    expect(died.isError).toBe(true)
    expect(textOf(died)).toMatch(/^Error: mcp server notes died during the call: /)
    expect(booted.ctx.mcp.status()[0]!.state).toBe('failed')
    // Still down: the next call fails fast and says the server is down.
    const down = await lookup(booted, 'x')
    expect(textOf(down)).toMatch(/^Error: mcp server notes is down: it cannot be reached/)
    // Up again: the next call reconnects.
    await listen(Number(new URL(url).port))
    expect(textOf(await lookup(booted, 'back'))).toContain('back: a note')
    expect(booted.ctx.mcp.status()[0]!.state).toBe('ready')
  }, 60_000)
})
