// The network ask through the real sandbox: a sandboxed command reaches a host no allow list names, the sandbox's
// proxy holds the connection, and the permission policy asks the person with the same choices as for a call. The
// host is a listener on this machine reached by the name `localhost` (the sandbox refuses loopback addresses by
// number, and lets a name through only once it is allowed); nothing leaves the machine.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import type { PermissionAnswer, PermissionAsk, PermissionMode } from '@keel/permissions'
import * as sandboxPlugin from '@keel/sandbox'
import type { SessionEvent } from '@keel/session'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('bwrap', HAS_BWRAP, 'the real sandbox')
const root = join(import.meta.dirname, '../../..')
let server: Server
let port = 0
let hits = 0

beforeAll(async () => {
  server = createServer((_req, res) => {
    hits++
    res.end('hello-from-the-host\n')
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  port = (server.address() as { port: number }).port
})
afterAll(() => server?.close())

/** What the model runs: the proxy applies (no `no_proxy` exemption for localhost), so the sandbox decides. */
const fetchCommand = () => `curl --noproxy '' -sS -m 20 http://localhost:${port}/`

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function start(mode: PermissionMode, answers: PermissionAnswer[], asked: PermissionAsk[]) {
  keel = await makeKeel({
    steps: [
      { toolCalls: [{ id: 'c1', name: 'bash', arguments: { command: fetchCommand() } }] },
      { toolCalls: [{ id: 'c2', name: 'bash', arguments: { command: fetchCommand() } }] },
      { text: 'done' },
    ],
    plugins: [
      // The command itself is allowed by a rule: only its network is in question.
      [permissionsPlugin, { mode, allow: ['bash(curl:*)'], deny: [], sandbox: { allowedDomains: [] } }],
      [sandboxPlugin, { allowedDomains: [] }],
    ],
  })
  await waitFor(() => keel!.ctx.get('permissions') && keel!.ctx.get('sandbox'), 'plugins')
  keel.ctx.permissions.setAsker(async (ask) => {
    asked.push(ask)
    return answers.shift() ?? { decision: 'deny', scope: 'once' }
  })
  const agent = keel.agent()
  expect((await agent.prompt('fetch it twice')).reason).toBe('completed')
  const results = agent.session.events
    .filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result')
    .map((e) => textOfContent(e.data.content))
  const network = agent.session.events
    .filter((e) => e.type === 'permission/request' || e.type === 'permission/decision')
    .map((e) => e.data as { callId: string; host?: string; scope?: string; decision?: string; file?: string })
    .filter((data) => data.host)
  return { results, network, cwd: keel.cwd }
}

describe.skipIf(skip)('a sandboxed command that reaches a host no allow list names', () => {
  test('ask mode asks about the host; "always" saves it to settings.local.json and the next run does not ask', async () => {
    const asked: PermissionAsk[] = []
    hits = 0
    const { results, network, cwd } = await start('ask', [{ decision: 'allow', scope: 'always' }], asked)
    expect(asked.map((ask) => `${ask.callId} ${ask.summary}`)).toEqual([`c1 network: localhost:${port}`])
    expect(asked[0]).toMatchObject({ host: 'localhost', tool: 'bash', callId: 'c1', suggestedRules: ['localhost'] })
    expect(asked[0]!.summary).toBe(`network: localhost:${port}`)
    expect(results[0]).toContain('hello-from-the-host')
    expect(results[1]).toContain('hello-from-the-host')
    expect(hits).toBe(2)
    const saved = JSON.parse(readFileSync(join(cwd, '.keel', 'settings.local.json'), 'utf8'))
    expect(saved.sandbox.allowedDomains).toEqual(['localhost'])
    expect(network).toEqual([
      { callId: 'c1', tool: 'bash', summary: `network: localhost:${port}`, host: 'localhost' },
      {
        callId: 'c1',
        decision: 'allow',
        scope: 'always',
        host: 'localhost',
        file: join(cwd, '.keel', 'settings.local.json'),
      },
    ])
  })

  test('allow for this session holds the host for the next command; a deny with a sentence refuses it', async () => {
    const asked: PermissionAsk[] = []
    hits = 0
    const session = await start('ask', [{ decision: 'allow', scope: 'session' }], asked)
    expect(asked).toHaveLength(1)
    expect(session.results[1]).toContain('hello-from-the-host')
    expect(existsSync(join(session.cwd, '.keel', 'settings.local.json'))).toBe(false)
    await keel!.dispose()
    keel = undefined

    hits = 0
    const denied = await start('ask', [{ decision: 'deny', scope: 'once', message: 'no network today' }], asked)
    expect(hits).toBe(0)
    expect(denied.results[0]).toContain(
      'keel: the sandbox refused network access to localhost:' +
        `${port}: localhost is not on sandbox.allowedDomains: the user declined it and said: "no network today"`,
    )
    expect(denied.network.at(1)).toMatchObject({ decision: 'deny', host: 'localhost', message: 'no network today' })
  })

  test('auto mode refuses without asking and names --allow-domain in the result', async () => {
    const asked: PermissionAsk[] = []
    hits = 0
    const { results, network } = await start('auto', [], asked)
    expect(asked).toEqual([])
    expect(hits).toBe(0)
    expect(results[0]).toContain(
      `keel: the sandbox refused network access to localhost:${port}: denied by auto mode: localhost is not on sandbox.allowedDomains; --allow-domain localhost`,
    )
    expect(network[0]).toEqual({ callId: 'c1', decision: 'deny', scope: 'mode', mode: 'auto', host: 'localhost' })
  })
})

describe.skipIf(skip)('print mode', () => {
  const scratch = mkdtempSync(join(homedir(), '.keel-network-ask-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  /** `keel -p` run without blocking: the listener answers from this process. */
  function keelPrint(dir: string, extra: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const script = join(scratch, `script-${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(
      script,
      JSON.stringify({
        steps: [{ toolCalls: [{ name: 'bash', arguments: { command: fetchCommand() } }] }, { text: 'done' }],
      }),
    )
    const child = spawn(
      process.execPath,
      [join(root, 'bin/keel.js'), '-p', 'fetch', '--output-format', 'json', '--model', `scripted/${script}`, ...extra],
      { cwd: dir, env: { ...process.env, KEEL_HOME: join(scratch, 'home') }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    return new Promise((done) => child.on('close', (status) => done({ status, stdout, stderr })))
  }

  test('a refused host is a permission denial naming --allow-domain; --allow-domain lets the command reach it', async () => {
    const dir = join(scratch, 'repo')
    mkdirSync(dir)
    hits = 0
    const refused = await keelPrint(dir, [])
    expect(refused.status, refused.stderr).toBe(0)
    expect(hits).toBe(0)
    const hint = 'localhost is not on sandbox.allowedDomains; --allow-domain localhost'
    expect(refused.stderr).toContain(`keel: ${hint}`)
    const summary = JSON.parse(refused.stdout)
    expect(summary.permissionDenials).toEqual([
      expect.objectContaining({ tool: 'bash', host: 'localhost', reason: expect.stringContaining(hint) }),
    ])

    const allowed = await keelPrint(dir, ['--allow-domain', 'localhost'])
    expect(allowed.status, allowed.stderr).toBe(0)
    expect(hits).toBe(1)
    expect(JSON.parse(allowed.stdout).permissionDenials).toEqual([])
    expect(allowed.stdout).not.toContain('not on sandbox.allowedDomains')

    const bad = await keelPrint(dir, ['--allow-domain', 'http://x'])
    expect(bad.status).toBe(2)
    expect(bad.stderr).toContain('--allow-domain "http://x" is refused')
  })
})
