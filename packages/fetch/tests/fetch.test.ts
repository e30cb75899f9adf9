import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import type { ToolExecution } from '@keel/tools'
import * as fetchPlugin from '@keel/fetch'
import { webFetchTool } from '../src/tool.ts'
import { rangeOf } from '../src/address.ts'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

type Route = (res: ServerResponse, url: URL) => void
const routes = new Map<string, Route>()
let server: Server
let base: string
let port: number

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', base)
    const route = routes.get(url.pathname)
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page')
      return
    }
    route(res, url)
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  port = (server.address() as AddressInfo).port
  base = `http://127.0.0.1:${port}`
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

const page = (res: ServerResponse, type: string, body: string | Buffer, extra: Record<string, string> = {}) =>
  res.writeHead(200, { 'content-type': type, ...extra }).end(body)

routes.set('/doc', (res) =>
  page(
    res,
    'text/html; charset=utf-8',
    `<!doctype html><html><head><title>Install \u001b[31mguide</title></head><body>
     <nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
     <article><h1>Installing the widget</h1>
     <p>Run <code>npm i widget</code>, then read <a href="/guide/next">the next step</a>.\u001b]0;pwned\u0007</p>
     <pre><code>const widget = require('widget')</code></pre>
     <ul><li>fast</li><li>small</li></ul>
     <p>${'The widget does one thing and does it well. '.repeat(20)}</p></article>
     <footer>© nobody</footer><script>alert('no')</script></body></html>`,
  ),
)
routes.set('/data', (res) => page(res, 'application/json', '{"name":"widget","tags":["a","b"]}'))
routes.set('/png', (res) => page(res, 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0])))
routes.set('/hop', (res) => res.writeHead(302, { location: '/data' }).end())
routes.set('/loop', (res) => res.writeHead(302, { location: '/loop' }).end())
routes.set('/away', (res) => res.writeHead(301, { location: `http://localhost:${port}/data` }).end())
routes.set('/huge', (res) => page(res, 'text/plain', 'x'.repeat(3 * 1024 * 1024)))
// 16 MB once inflated, 16 KB on the wire: sixteen times the 1 MB cap is as much a bomb as more would be.
routes.set('/bomb', (res) =>
  page(res, 'text/plain', gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x61)), { 'content-encoding': 'gzip' }),
)
routes.set('/drip', (res) => {
  res.writeHead(200, { 'content-type': 'text/plain' })
  const timer = setInterval(() => res.write('.'), 50)
  res.on('close', () => clearInterval(timer))
})
// Ten times deeper than the worker converts to Markdown: past that depth, more only costs the test time.
routes.set('/deep', (res) =>
  page(res, 'text/html', `<html><body>${'<div>'.repeat(2000)}deep${'</div>'.repeat(2000)}</body></html>`),
)
routes.set('/missing', (res) => res.writeHead(410, { 'content-type': 'text/html' }).end('<p>Gone for good</p>'))

const config = {
  timeoutMs: 1500,
  maxBytes: 1024 * 1024,
  maxChars: 60_000,
  maxRedirects: 3,
  privateHosts: ['127.0.0.1'],
}

function exec(signal = new AbortController().signal): ToolExecution {
  return { callId: 'c1', signal }
}

async function run(
  url: string,
  options: { config?: Partial<typeof config>; signal?: AbortSignal; resolve?: Parameters<typeof webFetchTool>[1] } = {},
) {
  const tool = webFetchTool({ ...config, ...options.config }, options.resolve)
  const out = await tool.execute({ url }, exec(options.signal))
  return typeof out === 'string'
    ? { isError: false, text: out }
    : { isError: Boolean(out.isError), text: textOfContent(out.content) }
}

describe('web_fetch', () => {
  test('an HTML page becomes its main content as Markdown, with absolute links and no escape codes', async () => {
    const out = await run(`${base}/doc`)
    expect(out.isError).toBe(false)
    expect(out.text).toMatch(/^# Install \[31mguide\n\nSource: http:\/\/127\.0\.0\.1:\d+\/doc \(HTTP 200, \d+ KB\)/)
    expect(out.text).toContain('# Installing the widget')
    expect(out.text).toContain(`Run \`npm i widget\`, then read [the next step](${base}/guide/next).`)
    expect(out.text).toContain("```\nconst widget = require('widget')\n```")
    expect(out.text).toContain('-   fast')
    expect(out.text).not.toContain('alert')
    expect(out.text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/)
  })

  test('JSON is pretty-printed; a binary type is refused in one line', async () => {
    expect((await run(`${base}/data`)).text).toContain('{\n  "name": "widget",\n  "tags": [\n    "a",')
    const png = await run(`${base}/png`)
    expect(png).toEqual({
      isError: true,
      text: 'Error: the page is image/png (1 KB), not text; web_fetch returns HTML, text and JSON only',
    })
  })

  test('loopback, private and link-local addresses are refused unless the host is named', async () => {
    const refused = await run(`${base}/doc`, { config: { privateHosts: [] } })
    expect(refused.isError).toBe(true)
    expect(refused.text).toMatch(/127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address: refused/)
    // A name whose DNS answer is the metadata endpoint, or mixes a public and a private address.
    const metadata = await run('http://metadata.example/latest', {
      resolve: async () => [{ address: '169.254.169.254', family: 4 }],
    })
    expect(metadata.text).toMatch(/a linkLocal address: refused/)
    const mixed = await run('http://mixed.example/', {
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ],
    })
    expect(mixed.text).toMatch(/resolves to 10\.0\.0\.7, a private address/)
    const mapped = await run('http://[::ffff:127.0.0.1]/', { config: { privateHosts: [] } })
    expect(mapped.text).toMatch(/a loopback address: refused/)
    expect(['0.0.0.0', '100.64.1.1', 'fd00::1', '::1'].map(rangeOf)).not.toContain('unicast')
  })

  test('redirects: followed on the same host, reported for another host, a loop ends', async () => {
    expect((await run(`${base}/hop`)).text).toMatch(/Source: http:\/\/127\.0\.0\.1:\d+\/data/)
    const away = await run(`${base}/away`)
    expect(away).toEqual({
      isError: false,
      text: `${base}/away redirected (HTTP 301) to http://localhost:${port}/data, another host or a plain-http URL: not followed. Call web_fetch with that URL to read it.`,
    })
    expect((await run(`${base}/loop`)).text).toBe(`Error: ${base}/loop redirected more than 3 times (a redirect loop?)`)
  })

  test('size, time and compression are bounded', async () => {
    const huge = await run(`${base}/huge`, { config: { maxChars: 5000 } })
    expect(huge.text).toMatch(/\(HTTP 200, 1024 KB, cut at 1024 KB\)/)
    expect(huge.text).toMatch(/\[… 1043576 more characters not shown\]$/)
    const bomb = await run(`${base}/bomb`, { config: { maxChars: 1000 } })
    expect(bomb.text).toMatch(/cut at 1024 KB/)
    // A drip of a byte every 50 ms never goes idle; only the whole fetch's time limit ends it.
    const drip = await run(`${base}/drip`, { config: { timeoutMs: 300 } })
    expect(drip).toEqual({ isError: true, text: 'Error: the fetch took longer than its time limit' })
  })

  test('a cancel stops a slow fetch; bad URLs are errors the model can correct', async () => {
    const controller = new AbortController()
    const pending = run(`${base}/drip`, { signal: controller.signal, config: { timeoutMs: 60_000 } })
    setTimeout(() => controller.abort(new Error('cancelled by the user')), 100)
    await expect(pending).rejects.toThrow('cancelled by the user')
    expect((await run('not a url')).text).toBe(
      'Error: "not a url" is not a URL (give an absolute http:// or https:// URL)',
    )
    expect((await run('file:///etc/passwd')).text).toBe('Error: only http and https URLs can be fetched, not file')
    expect((await run(`${base}/missing`)).text).toMatch(
      /^Error: http:\/\/127\.0\.0\.1:\d+\/missing answered HTTP 410\.[\s\S]*Gone for good/,
    )
  })

  test('a hostile page is converted off the event loop', async () => {
    let ticks = 0
    const timer = setInterval(() => ticks++, 5)
    const out = await run(`${base}/deep`)
    clearInterval(timer)
    expect(out.text).toContain('deep')
    // The loop kept turning while the worker parsed 2,000 nested elements.
    expect(ticks).toBeGreaterThan(0)
  })
})

describe('web_fetch through the agent loop', () => {
  let keel: Keel | undefined
  afterEach(async () => {
    await keel?.dispose()
    keel = undefined
  })

  test('the model reads a page and gets its Markdown as the tool result', async () => {
    keel = await makeKeel({
      steps: [{ toolCalls: [{ name: 'web_fetch', arguments: { url: `${base}/doc` } }] }, { text: 'Read it.' }],
      plugins: [[fetchPlugin, { ...config }]],
    })
    const agent = keel.agent()
    expect(await agent.prompt('read the docs')).toMatchObject({ reason: 'completed', text: 'Read it.' })
    const result = agent.session.events.find((e) => e.type === 'tool/result')!
    expect(result.data.isError).toBe(false)
    expect(textOfContent(result.data.content)).toContain('# Installing the widget')
  })
})
