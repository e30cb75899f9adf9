// Real-sandbox tests: bubblewrap, socat and ripgrep must be installed (.ci/run installs them). Without them these
// tests fail under CI=true and are skipped (reported as skipped, with the reason) elsewhere.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Context } from 'cordis'
import * as sandboxPlugin from '@keel/sandbox'
import { SandboxService, type SandboxStatus } from '@keel/sandbox'
import { runWrapped } from './run-wrapped.ts'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { IN_CI } from '../../../test-support/system-tools.ts'

const ctx = new Context()
ctx.plugin(sandboxPlugin, { allowedDomains: [] })
let service: SandboxService
let status: SandboxStatus
// Outside the system temp dir, so that only the workspace rule can make the cwd writable.
const root = mkdtempSync(join(homedir(), '.keel-sandbox-test-'))
const cwd = join(root, 'cwd')
const outside = join(root, 'outside')
mkdirSync(cwd)
mkdirSync(outside)
let server: Server
let port = 0
let connections = 0

beforeAll(async () => {
  await ctx.start()
  await waitFor(() => ctx.get('sandbox'), 'the sandbox service')
  service = ctx.get('sandbox')!
  status = await service.status()
  if (!status.available && !IN_CI) process.stderr.write(`skipping the real-sandbox tests: ${status.reason}\n`)
  server = createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  port = (server.address() as { port: number }).port
})
afterAll(async () => {
  server?.close()
  await ctx.stop().catch(() => {})
  rmSync(root, { recursive: true, force: true })
})

const runs = () => status.available || IN_CI
const unavailable = () => (status.available ? '' : `the sandbox is not available here: ${status.reason}`)

async function sandboxed(command: string, level: 'workspace' | 'read-only') {
  expect(status, 'the sandbox must be available here (install bubblewrap, socat, ripgrep)').toEqual({ available: true })
  return runWrapped(await service.wrap(command, { cwd, level }), cwd, 60_000)
}

describe('the sandbox service', () => {
  test('status is probed once and cached', async () => {
    expect(service.status()).toBe(service.status())
    if (IN_CI) expect(await service.status()).toEqual({ available: true })
  })

  // bwrap mounts a fresh /dev in the sandbox: a cwd under it would be missing in there, so the wrap refuses it.
  test('a cwd under /dev is refused, naming why', async ({ skip }) => {
    skip(!runs() || !existsSync('/dev/shm'), unavailable() || 'no /dev/shm here')
    const inDev = mkdtempSync('/dev/shm/keel-sandbox-cwd-')
    try {
      for (const level of ['workspace', 'read-only'] as const)
        await expect(service.wrap('true', { cwd: inDev, level })).rejects.toThrow(/is under \/dev, which the sandbox/)
    } finally {
      rmSync(inDev, { recursive: true, force: true })
    }
  })

  test('workspace: a write into the cwd succeeds', async ({ skip }) => {
    skip(!runs(), unavailable())
    const { code, text } = await sandboxed('echo inside > inside.txt && echo wrote', 'workspace')
    expect(text, text).toContain('wrote')
    expect(code).toBe(0)
    expect(readFileSync(join(cwd, 'inside.txt'), 'utf8')).toBe('inside\n')
  })

  test('workspace: a write outside the cwd and the temp dir fails', async ({ skip }) => {
    skip(!runs(), unavailable())
    const target = join(outside, 'escaped.txt')
    const { code, text } = await sandboxed(`echo out > ${target} && echo wrote`, 'workspace')
    expect(text).not.toContain('wrote')
    expect(text).toMatch(/Read-only file system|Permission denied/)
    expect(code).toBeGreaterThan(0)
    expect(existsSync(target)).toBe(false)
  })

  test('workspace: the system temp dir is writable', async ({ skip }) => {
    skip(!runs(), unavailable())
    const { text } = await sandboxed('f=$(mktemp -p /tmp) && echo ok > "$f" && echo wrote && rm "$f"', 'workspace')
    expect(text).toContain('wrote')
  })

  test('workspace: a connection to a listener on 127.0.0.1 fails', async ({ skip }) => {
    skip(!runs(), unavailable())
    const before = connections
    const { text } = await sandboxed(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`, 'workspace')
    expect(text).not.toContain('connected')
    expect(connections).toBe(before)
  })

  test('read-only: a write into the cwd fails, and so does one into the temp dir', async ({ skip }) => {
    skip(!runs(), unavailable())
    const { text } = await sandboxed(
      'echo a > ro.txt && echo wrote-cwd; echo b > /tmp/keel-ro-probe-$$ && echo wrote-tmp',
      'read-only',
    )
    expect(text).not.toContain('wrote-cwd')
    expect(text).not.toContain('wrote-tmp')
    expect(existsSync(join(cwd, 'ro.txt'))).toBe(false)
  })

  // Spawned as bwrap itself, its seccomp helper run by it directly (src/argv.ts): the filter still refuses a Unix
  // socket (EPERM; without it, connecting to a missing socket says ENOENT), and the helper, given its variable by
  // bwrap, still refuses a nested user namespace (which could undo the mounts), in both levels.
  test.each(['workspace', 'read-only'] as const)(
    "%s: bwrap runs without the runtime's shells, and its seccomp filter still refuses a Unix socket",
    async (level) => {
      if (!runs()) return
      const wrapped = await service.wrap('true', { cwd, level })
      await wrapped.dispose()
      expect(wrapped.file).toMatch(/\/bwrap$/)
      expect(wrapped.args.at(-4)).toMatch(/\/apply-seccomp$/)
      const probe = `require('net').createConnection('/nonexistent.sock').on('error', (e) => console.log('unix:', e.code))`
      const { text } = await sandboxed(
        `${process.execPath} -e "${probe}"; unshare --user true 2>/dev/null; echo "userns=$?"`,
        level,
      )
      expect(text).toContain('unix: EPERM')
      expect(text).toContain('userns=1')
    },
  )

  test('read-only: reading still works', async ({ skip }) => {
    skip(!runs(), unavailable())
    const { text, code } = await sandboxed('cat inside.txt 2>/dev/null || echo none; ls / | head -1', 'read-only')
    expect(code).toBe(0)
    expect(text.length).toBeGreaterThan(0)
  })
})

describe('bash through the sandbox', () => {
  let keel: Keel | undefined
  afterAll(async () => {
    await keel?.dispose()
  })

  async function bash(
    command: string,
    sandbox: 'workspace' | 'read-only' | 'off' | undefined,
    plugins: [unknown, unknown?][] = [[sandboxPlugin]],
  ) {
    keel ??= await makeKeel({ plugins })
    await waitFor(() => keel!.ctx.get('sandbox'), 'the sandbox service')
    const agent = keel.agent({ persist: false })
    const result = await keel.ctx.tools.execute({
      callId: 'c',
      name: 'bash',
      arguments: JSON.stringify({ command }),
      agent,
      signal: new AbortController().signal,
      sandbox,
    })
    return { ...result, text: textOfContent(result.content), cwd: keel.cwd }
  }

  test('exec.sandbox workspace confines the command; off and undefined run it plainly', async ({ skip }) => {
    skip(!runs(), unavailable())
    const target = join(outside, 'via-bash.txt')
    const confined = await bash(`echo x > ${target}; echo y > here.txt; cat here.txt`, 'workspace')
    expect(confined.isError).toBe(false)
    expect(confined.text).toMatch(/Read-only file system|Permission denied/)
    expect(confined.text).toMatch(/\ny\n\[exit code 0/)
    expect(existsSync(target)).toBe(false)
    const plain = await bash(`echo x > ${target} && echo wrote`, 'off')
    expect(plain.text).toMatch(/^wrote\n/)
    rmSync(target)
    expect((await bash(`echo x > ${target} && echo wrote`, undefined)).text).toMatch(/^wrote\n/)
  })

  // The processes a sandboxed command leaves die with its PID namespace; the result must say so, as outside, and
  // must not count the sandbox's own network relays.
  test.each(['workspace', 'read-only'] as const)(
    'in the %s sandbox, the result says what was left running and killed',
    async (level) => {
      if (!runs()) return

      // A subshell that never execs, a double fork, and a plain job: three, none of them the sandbox's relays.
      const three = await bash('( while :; do :; done ) & ( setsid sleep 100 & ); sleep 100 & echo started', level)
      expect(three.text).toMatch(
        /^started\n\[exit code 0 · [\d.]+ s\]\n\[killed 3 background processes the command left running\]$/,
      )
      const two = await bash('sleep 100 & ( setsid sleep 100 & ); sleep 0.2; echo started', level)
      expect(two.text).toMatch(
        /^started\n\[exit code 0 · [\d.]+ s\]\n\[killed 2 background processes the command left running\]$/,
      )
      const exited = await bash('sleep 100 & exit 3', level)
      expect(exited.text).toMatch(
        /\[exit code 3 · [\d.]+ s\]\n\[killed 1 background process the command left running\]$/,
      )
      const none = await bash('sleep 0.1 & wait; echo done', level)
      expect(none.text).toMatch(/^done\n\[exit code 0 · [\d.]+ s\]$/)
    },
  )
})

describe('a sandbox that cannot start never means an unsandboxed run', () => {
  let keel: Keel | undefined
  afterAll(async () => {
    await keel?.dispose()
  })

  class BrokenSandbox extends SandboxService {
    override status(): Promise<SandboxStatus> {
      return Promise.resolve({ available: false, reason: 'bubblewrap (bwrap) not installed' })
    }
  }

  test('a failed wrap is an isError result and the command does not run', async () => {
    keel = await makeKeel({ plugins: [[BrokenSandbox, { allowedDomains: [] }]] })
    await waitFor(() => keel!.ctx.get('sandbox'), 'the sandbox service')
    const agent = keel.agent({ persist: false })
    const result = await keel.ctx.tools.execute({
      callId: 'c',
      name: 'bash',
      arguments: JSON.stringify({ command: 'touch ran' }),
      agent,
      signal: new AbortController().signal,
      sandbox: 'workspace',
    })
    expect(result.isError).toBe(true)
    expect(textOfContent(result.content)).toBe(
      'Error: could not start the workspace sandbox: the sandbox is unavailable: bubblewrap (bwrap) not installed; the command was not run',
    )
    expect(existsSync(join(keel.cwd, 'ran'))).toBe(false)
  })

  test('no sandbox plugin loaded: an isError result, not a plain run', async () => {
    const bare = await makeKeel()
    try {
      const agent = bare.agent({ persist: false })
      const result = await bare.ctx.tools.execute({
        callId: 'c',
        name: 'bash',
        arguments: JSON.stringify({ command: 'touch ran' }),
        agent,
        signal: new AbortController().signal,
        sandbox: 'read-only',
      })
      expect(result.isError).toBe(true)
      expect(textOfContent(result.content)).toMatch(
        /must run in the read-only sandbox, but the sandbox plugin \(@keel\/sandbox\) is not loaded; the command was not run$/,
      )
      expect(existsSync(join(bare.cwd, 'ran'))).toBe(false)
    } finally {
      await bare.dispose()
    }
  })
})

describe('what a sandboxed command leaves behind', () => {
  let keel: Keel | undefined
  afterAll(async () => {
    await keel?.dispose()
  })

  test('dies with the sandbox, even after setsid; the call returns when the shell exits', async ({ skip }) => {
    skip(!runs(), unavailable())
    keel = await makeKeel({ plugins: [[sandboxPlugin, { allowedDomains: [] }]] })
    await waitFor(() => keel!.ctx.get('sandbox'), 'the sandbox service')
    const agent = keel.agent({ persist: false })
    // A name no other test uses, so the check below can look for it across the whole machine.
    const marker = `keel-sandbox-leftover-${process.pid}`
    const command = `setsid bash -c 'exec -a ${marker} sleep 300' & sleep 300 & echo started`
    const result = await keel.ctx.tools.execute({
      callId: 'c',
      name: 'bash',
      arguments: JSON.stringify({ command }),
      agent,
      signal: new AbortController().signal,
      sandbox: 'workspace',
    })
    expect(textOfContent(result.content)).toMatch(
      /^started\n\[exit code 0 · [\d.]+ s\]\n\[killed 2 background processes the command left running\]$/,
    )
    const still = () =>
      readdirSync('/proc')
        .filter((pid) => /^\d+$/.test(pid))
        .some((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(marker)
          } catch {
            return false
          }
        })
    await waitFor(() => !still(), 'the sandboxed sleeper to be gone')
  })
})
