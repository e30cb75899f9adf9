// The probe's answer kept across processes (src/probe.ts): a later process runs its first command without probing,
// then checks for real once that command has run; a changed tool is another answer; a kept yes that no longer holds
// fails the command (it never runs unsandboxed) and is replaced by the real answer. Real bubblewrap, behind a
// `bwrap` of the test's own on PATH that logs its arguments and can play a machine that forbids namespaces.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxService } from '@keel/sandbox'
import { waitFor } from '../../../test-support/harness.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'
import { runWrapped } from './run-wrapped.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-probe-'))
const bin = join(scratch, 'bin')
const log = join(scratch, 'bwrap.log')
const deny = join(scratch, 'deny')
const home = join(scratch, 'home')
const previous = { path: process.env.PATH, home: process.env.KEEL_HOME }
/** The probe's namespace check, as the fake logs it. */
const PROBE = '--die-with-parent --ro-bind / / --unshare-user --unshare-net --unshare-pid --dev /dev --proc /proc true'

let ctx: Context | undefined
afterEach(async () => {
  await ctx?.stop()
  ctx = undefined
})
afterAll(() => {
  process.env.PATH = previous.path
  if (previous.home === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previous.home
  rmSync(scratch, { recursive: true, force: true })
})

/** A new service with nothing probed yet, as a new process has. */
async function service(): Promise<SandboxService> {
  ctx = new Context()
  ctx.on('internal/warning', () => {})
  ctx.plugin(sandboxPlugin, { allowedDomains: [] })
  await ctx.start()
  await waitFor(() => ctx!.get('sandbox'), 'the sandbox service')
  return ctx.get('sandbox') as SandboxService
}

function probes(): number {
  return existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line === PROBE).length
    : 0
}

/** Runs `echo hi` in the workspace sandbox; its exit code and output. */
async function echo(sandbox: SandboxService): Promise<{ code: number | undefined; text: string }> {
  return runWrapped(await sandbox.wrap('echo hi', { cwd: scratch, level: 'workspace' }), scratch)
}

describe.skipIf(skipWithout('bubblewrap', HAS_BWRAP, 'the sandbox probe cache tests'))(
  'the probe kept across processes',
  () => {
    beforeAll(() => {
      const real = (process.env.PATH ?? '')
        .split(delimiter)
        .map((dir) => join(dir, 'bwrap'))
        .find((path) => existsSync(path))!
      mkdirSync(bin)
      writeFileSync(
        join(bin, 'bwrap'),
        `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nif [ -e '${deny}' ]; then echo 'bwrap: No permissions to create new namespace' >&2; exit 1; fi\nexec '${real}' "$@"\n`,
      )
      chmodSync(join(bin, 'bwrap'), 0o755)
      process.env.PATH = `${bin}${delimiter}${previous.path}`
      process.env.KEEL_HOME = home
    })

    test('a yes is kept: the next process runs its first command unprobed, then checks once it has run', async () => {
      const first = await service()
      expect(await first.status()).toEqual({ available: true })
      expect(probes()).toBe(1)
      await ctx!.stop()

      const next = await service()
      expect(await next.status()).toEqual({ available: true })
      expect(probes()).toBe(1)
      expect(await echo(next)).toEqual({ code: 0, text: 'hi\n' })
      // The check for real, after the command.
      await waitFor(() => probes() === 2, 'the check after the first command', 15_000)
      expect(await next.status()).toEqual({ available: true })
    }, 60_000)

    test('a changed tool is another answer: probed before the first command', async () => {
      const before = probes()
      const later = new Date(Date.now() + 5_000)
      utimesSync(join(bin, 'bwrap'), later, later)
      const sandbox = await service()
      expect(await sandbox.status()).toEqual({ available: true })
      expect(probes()).toBe(before + 1)
    }, 60_000)

    test('a kept yes that no longer holds fails the command, and the real answer replaces it', async () => {
      // The yes of the test before is kept for this bwrap; the machine now forbids namespaces.
      writeFileSync(deny, '')
      const sandbox = await service()
      const before = probes()
      expect(await sandbox.status()).toEqual({ available: true })
      const ran = await echo(sandbox)
      expect(ran.code).not.toBe(0)
      expect(ran.text).not.toContain('hi')
      await waitFor(() => probes() === before + 1, 'the check after the command', 15_000)
      let status = await sandbox.status()
      for (let tries = 0; status.available && tries < 200; tries++) {
        await new Promise((done) => setTimeout(done, 25))
        status = await sandbox.status()
      }
      expect(status.available === false && status.reason).toContain('No permissions to create new namespace')
      await expect(sandbox.wrap('echo hi', { cwd: scratch, level: 'workspace' })).rejects.toThrow(/unavailable/)
      await ctx!.stop()
      // The next process is not told yes again: it probes.
      const next = await service()
      expect((await next.status()).available).toBe(false)
      expect(probes()).toBe(before + 2)
    }, 60_000)
  },
)
