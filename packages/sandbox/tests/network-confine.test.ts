// Whose question a connection is: once the runtime's proxy is started, every sandboxed command of the process goes
// through it, read-only ones too, and the runtime asks about a host without saying which command connected. A host
// must then be decided by the command that connected or by no one: never by another running command's asker. The
// host is a listener on this machine reached by the name `localhost`; nothing leaves the machine.
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Context } from 'cordis'
import * as sandboxPlugin from '@keel/sandbox'
import type { HostAnswer, SandboxedLevel, SandboxService, WrapOptions } from '@keel/sandbox'
import { runCommand } from '@keel/shell'
import { waitFor } from '../../../test-support/harness.ts'
import { runWrapped } from './run-wrapped.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('bwrap', HAS_BWRAP, 'the real sandbox')
const ctx = new Context()
ctx.plugin(sandboxPlugin, { allowedDomains: [] })
let service: SandboxService
const cwd = mkdtempSync(join(homedir(), '.keel-network-confine-'))
let server: Server
let port = 0
let hits = 0

beforeAll(async () => {
  await ctx.start()
  await waitFor(() => ctx.get('sandbox'), 'the sandbox service')
  service = ctx.get('sandbox')!
  server = createServer((_req, res) => {
    hits++
    res.end('hello-from-the-host\n')
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  port = (server.address() as { port: number }).port
})
afterAll(async () => {
  server?.close()
  await ctx.stop().catch(() => {})
  rmSync(cwd, { recursive: true, force: true })
})

const fetchCommand = () => `curl --noproxy '' -sS -m 20 http://localhost:${port}/`

/** An asker that says yes to everything and notes what it was asked. */
function yes(key: string, asked: string[]): NonNullable<WrapOptions['network']> {
  return {
    key,
    ask: async (host, askedPort): Promise<HostAnswer> => {
      asked.push(`${key} ${host}:${askedPort}`)
      return { allowed: true }
    },
  }
}

/** Runs `command` sandboxed to its end. */
async function run(command: string, level: SandboxedLevel, network?: WrapOptions['network']) {
  const wrapped = await service.wrap(command, { cwd, level, ...(network ? { network } : {}) })
  const { text } = await runWrapped(wrapped, cwd, 60_000)
  return { text, refused: [...wrapped.refused] }
}

/** A command kept running (it connects nowhere) until the returned stop is called; an asking workspace one by default. */
async function holdAsker(
  network: NonNullable<WrapOptions['network']> | undefined,
  level: SandboxedLevel = 'workspace',
) {
  const wrapped = await service.wrap('sleep 120', { cwd, level, ...(network ? { network } : {}) })
  const cancel = new AbortController()
  const done = runCommand({
    file: wrapped.file,
    args: wrapped.args,
    cwd,
    timeoutMs: 120_000,
    signal: cancel.signal,
    onText: () => {},
    contained: wrapped.contained,
  })
  return {
    refused: wrapped.refused,
    async stop() {
      cancel.abort()
      await done
      await wrapped.dispose()
    },
  }
}

describe.skipIf(skip)('a connection is decided by the command that made it', () => {
  // First: only before the runtime's start is a read-only command wrapped without the proxy's relays.
  test('a read-only command wrapped before the proxy started cannot connect, so it does not stop an ask', async () => {
    const asked: string[] = []
    const held = await holdAsker(undefined, 'read-only')
    try {
      hits = 0
      const { text } = await run(fetchCommand(), 'workspace', yes('s1', asked))
      expect(asked).toEqual([`s1 localhost:${port}`])
      expect(text).toContain('hello-from-the-host')
      expect(hits).toBe(1)
    } finally {
      await held.stop()
    }
  })

  test('alone, a workspace command that can ask is asked about its own host', async () => {
    const asked: string[] = []
    hits = 0
    const { text } = await run(fetchCommand(), 'workspace', yes('s1', asked))
    expect(asked).toEqual([`s1 localhost:${port}`])
    expect(text).toContain('hello-from-the-host')
    expect(hits).toBe(1)
  })

  test("a read-only command's host is refused while another session's asking command runs", async () => {
    const asked: string[] = []
    const held = await holdAsker(yes('s1', asked))
    try {
      hits = 0
      const { text, refused } = await run(fetchCommand(), 'read-only')
      expect(asked).toEqual([])
      expect(hits).toBe(0)
      expect(text).not.toContain('hello-from-the-host')
      expect(refused).toEqual([expect.objectContaining({ host: 'localhost', port })])
      expect(refused[0]!.reason).toContain('localhost is not on the sandbox')
    } finally {
      await held.stop()
    }
  })

  test('a workspace command that cannot ask is refused while an asking command of the same session runs', async () => {
    const asked: string[] = []
    const held = await holdAsker(yes('s1', asked))
    try {
      hits = 0
      const { text, refused } = await run(fetchCommand(), 'workspace')
      expect(asked).toEqual([])
      expect(hits).toBe(0)
      expect(text).not.toContain('hello-from-the-host')
      expect(refused.map((r) => r.host)).toEqual(['localhost'])
    } finally {
      await held.stop()
    }
  })

  test('two asking commands running: neither is asked, the host is refused naming why', async () => {
    const asked: string[] = []
    const held = await holdAsker(yes('s1', asked))
    try {
      hits = 0
      const { text, refused } = await run(fetchCommand(), 'workspace', yes('s1', asked))
      expect(asked).toEqual([])
      expect(hits).toBe(0)
      expect(text).not.toContain('hello-from-the-host')
      expect(refused.map((r) => r.reason)).toEqual([expect.stringContaining('cannot tell which one connected')])
    } finally {
      await held.stop()
    }
  })

  // Last: the second plugin's dispose resets the process's runtime.
  test('a second Keel in the process is asked about its own command, though the first one started the proxy', async () => {
    // The runtime keeps the callback of the first initialize for the process; the second plugin's start reuses it.
    const other = new Context()
    other.plugin(sandboxPlugin, { allowedDomains: [] })
    await other.start()
    try {
      await waitFor(() => other.get('sandbox'), 'the second sandbox service')
      const second = other.get('sandbox')!
      const asked: string[] = []
      hits = 0
      const { text } = await runWrapped(
        await second.wrap(fetchCommand(), { cwd, level: 'workspace', network: yes('s2', asked) }),
        cwd,
        60_000,
      )
      expect(asked).toEqual([`s2 localhost:${port}`])
      expect(text).toContain('hello-from-the-host')
      expect(hits).toBe(1)
    } finally {
      await other.stop()
    }
  })
})
