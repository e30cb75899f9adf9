// The host under hostile requests: other host names, cross-site pages, oversized bodies, sessions of other
// directories, and many sessions at once.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { afterEach, describe, expect, test } from 'vitest'
import type { ScriptStep } from '@keel/llm'
import { AllowedHosts } from '../src/access.ts'
import { hostFixture, type makeHost, TOKEN, waitFor, type HostFixture } from './host-support.ts'

let fixture: HostFixture | undefined
const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await fixture?.dispose()
  fixture = undefined
})

async function setup(steps: ScriptStep[] = [], host: Parameters<typeof makeHost>[1] = {}): Promise<HostFixture> {
  fixture = await hostFixture(steps, { host })
  return fixture
}

const bearer = { authorization: `Bearer ${TOKEN}` }

describe('Host and Origin', () => {
  test('only the bound address and loopback names, with the bound port, are answered — page and API alike', async () => {
    const f = await setup()
    const app = f.host.app
    for (const host of [
      'evil.example',
      'evil.example:80',
      '127.0.0.1:4317',
      'localhost.evil.example',
      '127.0.0.1.nip.io',
      '',
    ]) {
      const page = await app.request('/', { headers: { host } })
      expect(page.status, host).toBe(403)
      const api = await app.request('/api/session.list', { method: 'POST', headers: { host, ...bearer }, body: '{}' })
      expect(api.status, host).toBe(403)
      expect(await api.json()).toMatchObject({ ok: false, error: { code: 'forbidden' } })
    }
    for (const host of ['127.0.0.1', 'localhost:80', 'LOCALHOST', '[::1]:80']) {
      const api = await app.request('/api/session.list', { method: 'POST', headers: { host, ...bearer }, body: '{}' })
      expect(api.status, host).toBe(200)
    }
  })

  test('over a real socket, a request naming another host is refused', async () => {
    const f = await setup()
    const port = await listen(f)
    const status = (host: string) =>
      new Promise<number | undefined>((done) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/api/session.list', method: 'POST', headers: { host, ...bearer } },
          (res) => {
            res.resume()
            done(res.statusCode)
          },
        )
        req.on('error', () => done(undefined))
        req.end('{}')
      })
    expect(await status('rebound.example')).toBe(403)
    expect(await status(`rebound.example:${port}`)).toBe(403)
    expect(await status(`localhost:${port}`)).toBe(200)
  })

  test('the names a host answers to follow its address and port', () => {
    const loopback = new AllowedHosts('127.0.0.1', 4317)
    for (const ok of ['127.0.0.1:4317', 'localhost:4317', '[::1]:4317']) expect(loopback.allows(ok), ok).toBe(true)
    for (const no of ['127.0.0.1', '127.0.0.1:4318', 'example.com:4317', '10.0.0.2:4317', '::1:4317', '[::1]'])
      expect(loopback.allows(no), no).toBe(false)
    expect(new AllowedHosts('::1', 9000).allows('[::1]:9000')).toBe(true)
    expect(new AllowedHosts('127.0.0.2', 9000).allows('127.0.0.2:9000')).toBe(true)
    const wildcard = new AllowedHosts('0.0.0.0', 9000)
    expect(wildcard.allows('192.168.1.20:9000')).toBe(true)
    expect(wildcard.allows('[fe80::1]:9000')).toBe(true)
    expect(wildcard.allows('rebound.example:9000')).toBe(false)
    expect(wildcard.allows('192.168.1.20:9001')).toBe(false)
    const proxied = new AllowedHosts('127.0.0.1', 4317, ['keel.example.com', 'keel.example.com:8443'])
    expect(proxied.allows('keel.example.com')).toBe(true)
    expect(proxied.allowsOrigin('https://keel.example.com:8443')).toBe(true)
    expect(proxied.allowsOrigin('https://keel.example.com')).toBe(false)
    expect(loopback.allowsOrigin('http://127.0.0.1:4317')).toBe(true)
    for (const origin of ['null', 'http://127.0.0.1:3000', 'http://localhost:4318', 'file:///tmp/x', 'nonsense'])
      expect(loopback.allowsOrigin(origin), origin).toBe(false)
  })

  test('a cross-site page cannot create a session: not with the query token (no-cors), not with a cookie, not with the header from another origin', async () => {
    const f = await setup()
    const app = f.host.app
    const create = (headers: Record<string, string>, query = '') =>
      app.request(`/api/session.create${query}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body: '{}',
      })
    // What a `fetch(…, { mode: 'no-cors', method: 'POST' })` from another site sends.
    const noCors = await create(
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
      `?token=${TOKEN}`,
    )
    expect(noCors.status).toBe(403)
    // The same without the browser's headers still lacks a token: the query token is not one, nor is a cookie.
    expect((await create({}, `?token=${TOKEN}`)).status).toBe(401)
    expect((await create({ cookie: `keel_token_80=${TOKEN}`, origin: 'http://localhost' })).status).toBe(401)
    // A page on another port of localhost that somehow learned the token: the origin stops it.
    const header = { 'x-keel-token': TOKEN }
    expect((await create({ ...header, origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site' })).status).toBe(
      403,
    )
    expect((await create({ ...header, 'sec-fetch-site': 'same-site' })).status).toBe(403)
    expect((await create({ ...header, origin: 'null' })).status).toBe(403)
    // A cross-origin event stream is refused too.
    expect((await app.request('/api/events', { headers: { ...header, origin: 'http://localhost:3000' } })).status).toBe(
      403,
    )
    expect(f.k.ctx.sessions.list(f.k.cwd)).toEqual([])
    // The page itself: same origin, the header.
    const own = await create({ ...header, origin: 'http://localhost', 'sec-fetch-site': 'same-origin' })
    expect(await own.json()).toMatchObject({ ok: true })
    expect(f.k.ctx.sessions.list(f.k.cwd)).toHaveLength(1)
  })

  test('the page is served without a token and sets no cookie; a query token is not traded for anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-web-client-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const { writeFileSync } = await import('node:fs')
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>t</title>')
    const f = await setup([], { clientDir: dir })
    for (const path of ['/', `/?token=${TOKEN}&messages=2`, '/index.html']) {
      const page = await f.host.app.request(path)
      expect(page.status, path).toBe(200)
      expect(page.headers.get('set-cookie'), path).toBeNull()
    }
  })

  test('a host that does not know its address yet refuses everything', async () => {
    const f = await setup()
    const { WebHost } = await import('../src/host.ts')
    const host = new WebHost({ ctx: f.k.ctx, cwd: f.k.cwd, model: f.k.model, token: TOKEN })
    cleanups.push(() => host.close())
    expect((await host.app.request('/api/session.list', { method: 'POST', headers: bearer, body: '{}' })).status).toBe(
      403,
    )
  })
})

/** Serves a host on 127.0.0.1 with @hono/node-server, as `keel serve` does. */
async function listen(f: HostFixture): Promise<number> {
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((done) => {
    const server = serve({ fetch: f.host.app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
      done({ server, port: info.port }),
    )
  })
  f.host.listening('127.0.0.1', port)
  cleanups.push(
    () =>
      new Promise<void>((done) => {
        ;(server as { closeAllConnections?: () => void }).closeAllConnections?.()
        server.close(() => done())
      }),
  )
  return port
}

/**
 * Streams a POST of `total` bytes (64 KiB pieces, chunked or with a Content-Length, waiting for the socket to drain)
 * and stops when the server answers or drops the connection. Resolves with the status line and how many body bytes
 * were handed to the socket.
 */
function streamPost(
  port: number,
  total: number,
  framing: 'chunked' | 'length',
): Promise<{ status: string; sent: number }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    const frame =
      framing === 'length'
        ? chunk
        : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
    let sent = 0
    let answer = ''
    let finished = false
    const finish = () => {
      if (finished) return
      finished = true
      socket.destroy()
      resolve({ status: answer.split('\r\n')[0] ?? '', sent })
    }
    socket.on('data', (data) => {
      answer += data.toString('latin1')
      if (answer.includes('\r\n\r\n')) finish()
    })
    socket.on('error', finish)
    socket.on('close', finish)
    const pump = () => {
      while (!finished && sent < total) {
        sent += chunk.length
        if (!socket.write(frame)) return void socket.once('drain', pump)
      }
      if (!finished && sent >= total && framing === 'chunked') socket.write('0\r\n\r\n')
    }
    socket.on('connect', () => {
      socket.write(
        [
          `POST /api/session.list HTTP/1.1`,
          `Host: 127.0.0.1:${port}`,
          `Authorization: Bearer ${TOKEN}`,
          'Content-Type: application/json',
          framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${total}`,
          '',
          '',
        ].join('\r\n'),
      )
      pump()
    })
  })
}

describe('body size', () => {
  test('a chunked body over 1 MiB is refused with 413 while it is still arriving, long before the client is done', async () => {
    const f = await setup()
    const port = await listen(f)
    const total = 96 * 1024 * 1024
    const { status, sent } = await streamPost(port, total, 'chunked')
    // Socket buffers on both sides hold a few MiB; the rest was never sent because nobody read it.
    expect(sent).toBeLessThan(total / 4)
    expect(status).toBe('HTTP/1.1 413 Payload Too Large')
  }, 60_000)

  test('a declared Content-Length over the limit is refused before reading; a body under it still works', async () => {
    const f = await setup()
    const port = await listen(f)
    const total = 96 * 1024 * 1024
    const { status, sent } = await streamPost(port, total, 'length')
    expect(sent).toBeLessThan(total / 4)
    expect(status).toBe('HTTP/1.1 413 Payload Too Large')
    const small = await fetch(`http://127.0.0.1:${port}/api/session.list`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ pad: 'x'.repeat(900_000) }),
    })
    expect(await small.json()).toMatchObject({ ok: true })
  }, 60_000)
})

describe('scope', () => {
  /** A finished session of another working directory, closed (only its file remains). */
  async function foreignSession(f: HostFixture): Promise<{ id: string; dir: string }> {
    const dir = join(f.k.home, 'elsewhere')
    mkdirSync(dir, { recursive: true })
    const agent = f.k.ctx.agents.create({ cwd: dir, model: f.k.model })
    await agent.prompt('secret work elsewhere')
    const id = agent.id
    f.k.ctx.agents.close(agent)
    return { id, dir }
  }

  test('sessions of other directories are neither listed nor served, and are refused exactly like ids with no session', async () => {
    const f = await setup([{ text: 'done' }, { text: 'again' }])
    const { id } = await foreignSession(f)
    expect((await f.ok('session.list', {})).sessions).toEqual([])
    expect((await f.ok('session.list', {})).all).toBe(false)
    const missing = '00000000-0000-4000-8000-000000000000'
    for (const method of [
      'session.history',
      'session.prompt',
      'session.cancel',
      'session.compact',
      'session.rewindPreview',
      'session.rewind',
    ] as const) {
      const foreign = await f.rpc(method, { sessionId: id, text: 'hi', seq: 1, scope: 'conversation' })
      const none = await f.rpc(method, { sessionId: missing, text: 'hi', seq: 1, scope: 'conversation' })
      if (method === 'session.compact' && !foreign.ok && foreign.error.code === 'unavailable') continue
      expect(foreign, method).toEqual({ ok: false, error: { code: 'not-found', message: `no session with id ${id}` } })
      expect(none, method).toEqual({
        ok: false,
        error: { code: 'not-found', message: `no session with id ${missing}` },
      })
    }
    // Nothing was resumed: the session stays closed, its log unchanged.
    expect(f.k.ctx.sessions.get(id)).toBeUndefined()
    expect(f.k.ctx.sessions.read(id).events.filter((event) => event.type === 'turn/start')).toHaveLength(1)
  })

  test('with --all every directory is listed and served; the list says so', async () => {
    const f = await setup([{ text: 'done' }, { text: 'resumed there' }], { all: true })
    const { id, dir } = await foreignSession(f)
    const listed = await f.ok('session.list', {})
    expect(listed.all).toBe(true)
    expect(listed.sessions.map((session) => [session.id, session.cwd])).toEqual([[id, dir]])
    expect((await f.ok('session.history', { sessionId: id })).events.length).toBeGreaterThan(0)
    await f.ok('session.prompt', { sessionId: id, text: 'continue' })
    const agent = f.k.ctx.agents.get(id)!
    expect(agent.session.header.cwd).toBe(dir)
    await agent.whenIdle()
  })

  test('the event stream carries only sessions in scope', async () => {
    const f = await setup([{ text: 'mine' }, { text: 'theirs' }])
    const stream = await f.events()
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'hello' })
    await waitFor(
      () => stream.sessionEvents(session.id).some((frame) => frame.event.type === 'turn/end'),
      'turn end frame',
    )
    const { id } = await foreignSession(f)
    expect(stream.frames.some((frame) => 'sessionId' in frame && frame.sessionId === id)).toBe(false)
  })
})

function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return undefined
  }
}

describe('open sessions', () => {
  test('sessions created over the API do not each hold a file for the life of the host; a closed one reopens with its history', async () => {
    const f = await setup([{ text: 'first answer' }, { text: 'second answer' }], { maxOpenSessions: 4 })
    const { session: first } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: first.id, text: 'remember this' })
    await f.k.ctx.agents.get(first.id)!.whenIdle()
    const before = openFds()
    for (let i = 0; i < 60; i++) await f.ok('session.create', {})
    expect(f.host.openSessions).toBeLessThanOrEqual(4)
    expect(f.k.ctx.sessions.liveSessions().length).toBeLessThanOrEqual(4)
    const after = openFds()
    if (before !== undefined && after !== undefined) expect(after - before).toBeLessThan(10)
    expect(f.k.ctx.sessions.get(first.id)).toBeUndefined()
    // Listed as not live, and everything still reachable from its file.
    const listed = await f.ok('session.list', {})
    expect(listed.sessions).toHaveLength(61)
    expect(listed.sessions.find((s) => s.id === first.id)).toMatchObject({ live: false, title: 'remember this' })
    const page = await f.ok('session.history', { sessionId: first.id })
    expect(page.events.map((entry) => entry.event.type)).toContain('assistant/message')
    // The next prompt reopens it and continues its numbering.
    const seq = page.events.at(-1)!.event.seq
    await f.ok('session.prompt', { sessionId: first.id, text: 'and now?' })
    const agent = f.k.ctx.agents.get(first.id)!
    await agent.whenIdle()
    expect(agent.session.events[seq + 1]).toMatchObject({ type: 'turn/start', data: { turn: 2 } })
    expect(agent.session.events.filter((event) => event.type === 'user/message')).toHaveLength(2)
  })

  test('a session with a running turn is never closed; an idle one closes after the idle time', async () => {
    const f = await setup([{ text: 'thinking', hang: true }], { maxOpenSessions: 2, idleCloseMs: 30 })
    const { session: busy } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: busy.id, text: 'wait' })
    const agent = f.k.ctx.agents.get(busy.id)!
    await waitFor(() => agent.status === 'running', 'turn start')
    for (let i = 0; i < 5; i++) await f.ok('session.create', {})
    expect(f.k.ctx.sessions.get(busy.id)).toBeDefined()
    // Idle ones go once their time is up; the running one stays.
    await waitFor(() => f.host.openSessions === 1, 'idle sessions closed')
    expect(f.k.ctx.sessions.get(busy.id)).toBeDefined()
    await f.ok('session.cancel', { sessionId: busy.id })
    await agent.whenIdle()
  })
})
