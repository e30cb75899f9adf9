import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SESSION_FORMAT_VERSION, sessionPath } from '@keel/session'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { clientDistDir, clientIsFresh, clientSourceDir, ensureClientBuilt } from '../src/build.ts'
import { writeChunkRecorder } from '../../../test-support/chunk-recorder.ts'
import { exitOf, runKeel, serve, type Served } from './serve-support.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-serve-'))
const home = join(scratch, 'home')
const script = join(scratch, 'script.json')
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
beforeAll(async () => {
  writeFileSync(script, JSON.stringify({ steps: [{ text: 'hello from the script' }] }))
  await ensureClientBuilt()
}, 120_000)

/** `session.list` with the printed token. */
function listSessions(served: Served): Promise<Response> {
  return fetch(`${served.origin}/api/session.list`, {
    method: 'POST',
    body: '{}',
    headers: { authorization: `Bearer ${served.token}` },
  })
}

function newest(dir: string): number {
  let max = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) max = Math.max(max, statSync(join(entry.parentPath, entry.name)).mtimeMs)
  }
  return max
}

test('the built client is fresh, and dated to its sources so it never makes the CLI bundle look stale', () => {
  expect(clientIsFresh()).toBe(true)
  // The build lists the modules of other packages it bundled (the browser-safe entries) beside itself.
  const shared: string[] = JSON.parse(readFileSync(join(clientDistDir(), '.shared-sources.json'), 'utf8'))
  expect(shared).toEqual(expect.arrayContaining(['../../../todo/src/plan.ts', '../../../session/src/text.ts']))
  const built = newest(clientDistDir())
  const sources = Math.max(
    newest(clientSourceDir()),
    ...shared.map((file) => statSync(resolve(clientSourceDir(), file)).mtimeMs),
  )
  expect(built).toBeGreaterThanOrEqual(sources)
  expect(built - sources).toBeLessThan(1)
})

test('an edit to a module of another package that the client bundled makes the build stale', () => {
  const dir = mkdtempSync(join(scratch, 'fresh-'))
  const source = join(dir, 'web/src/client')
  const out = join(dir, 'web/client-dist')
  mkdirSync(source, { recursive: true })
  mkdirSync(out, { recursive: true })
  writeFileSync(join(source, 'main.tsx'), '')
  mkdirSync(join(dir, 'todo/src'), { recursive: true })
  writeFileSync(join(dir, 'todo/src/plan.ts'), '')
  writeFileSync(join(out, 'index.html'), '')
  const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds)
  at(join(source, 'main.tsx'), 1000)
  at(join(dir, 'todo/src/plan.ts'), 1000)
  at(join(out, 'index.html'), 2000)
  // A build from before the list was written cannot say what it bundled: stale.
  expect(clientIsFresh(source, out)).toBe(false)
  writeFileSync(join(out, '.shared-sources.json'), JSON.stringify(['../../../todo/src/plan.ts']))
  expect(clientIsFresh(source, out)).toBe(true)
  at(join(dir, 'todo/src/plan.ts'), 3000)
  expect(clientIsFresh(source, out)).toBe(false)
  at(join(dir, 'todo/src/plan.ts'), 1000)
  rmSync(join(dir, 'todo/src/plan.ts'))
  expect(clientIsFresh(source, out)).toBe(false)
})

describe('keel serve (the real binary)', () => {
  test('listens on 127.0.0.1, prints a URL with a token, serves the page, answers the API only with the token, stops on SIGINT', async () => {
    const served = await serve(
      ['--port', '0', '--model', `scripted/${script}`, '--cwd', scratch],
      { KEEL_HOME: home },
      scratch,
    )
    try {
      const url = new URL(served.url)
      expect(url.hostname).toBe('127.0.0.1')
      expect(Number(url.port)).toBeGreaterThan(0)
      expect(served.token).toMatch(/^[A-Za-z0-9_-]{32}$/)
      const page = await fetch(`${served.origin}/`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
      expect(await page.text()).toContain('<div id="root"></div>')
      const denied = await fetch(`${served.origin}/api/session.list`, { method: 'POST', body: '{}' })
      expect(denied.status).toBe(401)
      const listed = await listSessions(served)
      expect(await listed.json()).toEqual({ ok: true, value: { sessions: [], cwd: scratch, all: false } })
      // The printed URL carries the token in its fragment, which no request sends; the page answers with no cookie.
      expect(served.url).toBe(`${served.origin}/#token=${served.token}`)
      const first = await fetch(served.url, { redirect: 'manual' })
      expect(first.status).toBe(200)
      expect(first.headers.get('set-cookie')).toBeNull()
      expect(
        (await fetch(`${served.origin}/api/session.list?token=${served.token}`, { method: 'POST', body: '{}' })).status,
      ).toBe(401)
    } finally {
      expect(await served.stop()).toBe(0)
    }
    expect(served.stderr()).toContain('keel: stopping')
  })

  test('--all serves every working directory and says so', async () => {
    const served = await serve(
      ['--port', '0', '--all', '--model', `scripted/${script}`, '--cwd', scratch],
      { KEEL_HOME: home },
      scratch,
    )
    try {
      const listed = await listSessions(served)
      expect(await listed.json()).toMatchObject({ ok: true, value: { all: true } })
    } finally {
      expect(await served.stop()).toBe(0)
    }
    expect(served.stderr()).toContain('keel: serving the sessions of every working directory (--all)')
  })

  test("--resume of another directory's session is refused with one line unless --all", async () => {
    const elsewhere = join(scratch, 'elsewhere')
    const id = '11111111-2222-4333-8444-555555555555'
    const path = sessionPath(elsewhere, id, home)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(
      path,
      JSON.stringify({ type: 'session', version: SESSION_FORMAT_VERSION, id, createdAt: Date.now(), cwd: elsewhere }) +
        '\n',
    )
    const child = runKeel(
      ['serve', '--port', '0', '--resume', id, '--model', `scripted/${script}`, '--cwd', scratch],
      { KEEL_HOME: home },
      scratch,
    )
    let err = ''
    child.stderr!.on('data', (chunk) => {
      err += chunk
    })
    expect(await exitOf(child)).toBe(2) // like the other refused serve flags
    expect(err.trim().split('\n')).toEqual([
      expect.stringContaining(
        `--resume: session ${id} belongs to ${elsewhere}, not ${scratch}; serve from there, or add --all`,
      ),
    ])
    const served = await serve(
      ['--port', '0', '--all', '--resume', id, '--model', `scripted/${script}`, '--cwd', scratch],
      { KEEL_HOME: home },
      scratch,
    )
    try {
      expect(served.url).toContain(`&s=${id}`)
      // Answering means the server is past start-up (its SIGINT handler is installed after the URL is printed).
      const listed = await listSessions(served)
      expect(await listed.json()).toMatchObject({
        ok: true,
        value: { sessions: [expect.objectContaining({ id, cwd: elsewhere })] },
      })
    } finally {
      expect(await served.stop()).toBe(0)
    }
  })

  test('under ulimit -n 200, 300 sessions created over the API all work (idle ones are closed, not leaked)', async () => {
    const served = await serve(
      ['--port', '0', '--model', `scripted/${script}`, '--cwd', scratch],
      { KEEL_HOME: join(scratch, 'home-ulimit') },
      scratch,
      60_000,
      { maxOpenFiles: 200 },
    )
    try {
      const call = async (method: string, params: unknown) => {
        const response = await fetch(`${served.origin}/api/${method}`, {
          method: 'POST',
          body: JSON.stringify(params),
          headers: { authorization: `Bearer ${served.token}` },
        })
        return response.json() as Promise<{
          ok: boolean
          value?: { session?: { id: string } }
          error?: { message: string }
        }>
      }
      const ids: string[] = []
      for (let i = 0; i < 300; i++) {
        const created = await call('session.create', {})
        expect(created, `session ${i}`).toMatchObject({ ok: true })
        ids.push(created.value!.session!.id)
      }
      // The first one was closed long ago; it reopens on its first prompt.
      expect(await call('session.prompt', { sessionId: ids[0], text: 'still there?' })).toMatchObject({ ok: true })
    } finally {
      expect(await served.stop()).toBe(0)
    }
  }, 120_000)

  test('the URL is printed before the plugins boot, and the page and API then work', async () => {
    // Preloads note the chunks the bundle loads (test-support's chunk recorder) and the moment the URL line is
    // written, in order, in one list.
    const list = join(scratch, 'early-order.txt')
    writeFileSync(list, '')
    const recorder = writeChunkRecorder(scratch)
    const urlMark = join(scratch, 'url-mark.cjs')
    writeFileSync(
      urlMark,
      `const { appendFileSync } = require('node:fs')
const write = process.stdout.write.bind(process.stdout)
process.stdout.write = (chunk, ...rest) => {
  if (String(chunk).startsWith('Keel web UI:')) appendFileSync(process.env.KEEL_CHUNK_LIST, 'URL\\n')
  return write(chunk, ...rest)
}
`,
    )
    const served = await serve(
      ['--port', '0', '--model', `scripted/${script}`, '--cwd', scratch],
      { KEEL_HOME: home, KEEL_CHUNK_LIST: list, NODE_OPTIONS: `--require=${recorder} --require=${urlMark}` },
      scratch,
    )
    try {
      const page = await fetch(served.url)
      expect(page.status).toBe(200)
      const listed = await listSessions(served)
      expect(await listed.json()).toMatchObject({ ok: true, value: { cwd: scratch } })
    } finally {
      expect(await served.stop()).toBe(0)
    }
    // A chunk's line is its file URL, then ` cached` or ` compiled`.
    const order = readFileSync(list, 'utf8')
      .trim()
      .split('\n')
      .map((line) => (line === 'URL' ? line : fileURLToPath(line.split(' ')[0]!)))
    const url = order.indexOf('URL')
    // The shell plugin's code loads with the boot and for nothing else: the URL must come before it.
    const boot = order.findIndex(
      (file) => file !== 'URL' && readFileSync(file, 'utf8').includes('//! packages/shell/src/'),
    )
    expect(boot, 'the run did not use the bundle').toBeGreaterThan(0)
    expect(url, order.join('\n')).toBeGreaterThanOrEqual(0)
    expect(url).toBeLessThan(boot)
  })

  test('a start the boot never takes over (the boot failed) is abandoned: the port is closed again', async () => {
    const { startServe } = await import('../src/serve.ts')
    const started = await startServe({ flags: { port: '0' }, cwd: scratch, modelSpec: `scripted/${script}` })
    expect(started).toBeDefined()
    const { port } = started!.server.address() as { port: number }
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200)
    await started!.abandon()
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow()
    // --resume and --continue name their session in the URL: those start after the boot.
    expect(await startServe({ flags: { port: '0', continue: true }, cwd: scratch, modelSpec: 'scripted/demo' })).toBe(
      undefined,
    )
  })

  test('a model that cannot be made is refused with one line before any URL is printed', async () => {
    const child = runKeel(
      ['serve', '--port', '0', '--model', 'openai/gpt-4o'],
      { KEEL_HOME: home, OPENAI_API_KEY: '' },
      scratch,
    )
    let out = ''
    let err = ''
    child.stdout!.on('data', (chunk) => {
      out += chunk
    })
    child.stderr!.on('data', (chunk) => {
      err += chunk
    })
    expect(await exitOf(child)).toBe(2)
    expect(out).toBe('')
    expect(err).toContain('OPENAI_API_KEY')
    // A bad --mode too: nothing is served before the flags are checked.
    const badMode = runKeel(
      ['serve', '--port', '0', '--mode', 'sideways', '--model', `scripted/${script}`],
      { KEEL_HOME: home },
      scratch,
    )
    let modeOut = ''
    badMode.stdout!.on('data', (chunk) => {
      modeOut += chunk
    })
    expect(await exitOf(badMode)).toBe(2)
    expect(modeOut).toBe('')
  })

  test('--host 0.0.0.0 is refused with one line', async () => {
    const child = runKeel(
      ['serve', '--host', '0.0.0.0', '--model', `scripted/${script}`],
      { KEEL_HOME: home, KEEL_SERVE_ALLOW_REMOTE: '' },
      scratch,
    )
    let err = ''
    child.stderr!.on('data', (chunk) => {
      err += chunk
    })
    expect(await exitOf(child)).toBe(2)
    expect(err.trim().split('\n')).toEqual([
      expect.stringMatching(/^keel: refusing to serve on 0\.0\.0\.0: it is not a loopback address/),
    ])
  })
})
