// The added cost of the sandbox per bash call: the same `true` through the bash tool unsandboxed and in each sandbox
// level, interleaved in one run so machine load hits them alike; the wrap (building the bwrap command line) is also
// timed on its own, and so are the floors under it: the wrapped command spawned directly (what the runtime's command
// line costs without Keel) and a bare `bwrap` with the same namespaces. Needs bubblewrap, socat and ripgrep.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxService } from '@keel/sandbox'
import { runCommand } from '@keel/shell'
import { makeKeel, waitFor } from '../test-support/harness.ts'
import { median, ms, ratio, row } from './stats.ts'

const RUNS = 15
const keel = await makeKeel({ plugins: [[sandboxPlugin, { allowedDomains: [] }]] })
try {
  await waitFor(() => keel.ctx.get('sandbox'), 'the sandbox service')
  const sandbox = keel.ctx.get('sandbox') as SandboxService
  const status = await sandbox.status()
  if (!status.available) {
    row('sandbox unavailable, nothing measured', status.reason)
  } else {
    const agent = keel.agent({ persist: false })
    // In ask and auto mode a workspace command may reach a host once asked (auto's answer names --allow-domain), so
    // it runs beside the runtime's proxy relays; with no one to ask and no allow list it runs without them.
    const ask = async () => ({ allowed: false as const, reason: 'not in this bench' })
    const call = async (sandboxLevel: 'workspace' | 'read-only' | undefined, asks = false) => {
      const started = performance.now()
      const result = await keel.ctx.tools.execute({
        callId: 'b',
        name: 'bash',
        arguments: '{"command":"true"}',
        agent,
        signal: new AbortController().signal,
        sandbox: sandboxLevel,
        ...(asks ? { network: ask } : {}),
      })
      if (result.isError) throw new Error(JSON.stringify(result.content))
      return performance.now() - started
    }
    await call(undefined)
    // The first sandboxed command of the process that may reach a host pays the runtime's start (its proxy, the
    // bridge, any file search): no warm-up here (gap.bench.ts has one).
    const first = await call('workspace', true)
    const plain: number[] = []
    const workspace: number[] = []
    const asking: number[] = []
    const readOnly: number[] = []
    const wraps: number[] = []
    const alone: number[] = []
    const bare: number[] = []
    // A namespace set-up can fail now and then on a loaded machine: one retry, then the bench stops, saying why.
    const spawned = async (file: string, args: string[], retry = true): Promise<number> => {
      const started = performance.now()
      let text = ''
      const outcome = await runCommand({
        file,
        args,
        cwd: keel.cwd,
        timeoutMs: 30_000,
        signal: new AbortController().signal,
        onText(chunk) {
          text += chunk
        },
        contained: true,
      })
      if (outcome.kind === 'exited' && outcome.code === 0) return performance.now() - started
      if (retry) return spawned(file, args, false)
      throw new Error(`${file} failed: ${JSON.stringify(outcome)}: ${text.trim()}`)
    }
    const BARE = ['--ro-bind', '/', '/', '--unshare-user', '--unshare-net', '--unshare-pid', '--dev', '/dev', '--proc']
    for (let i = 0; i < RUNS; i++) {
      plain.push(await call(undefined))
      asking.push(await call('workspace', true))
      workspace.push(await call('workspace'))
      readOnly.push(await call('read-only'))
      const started = performance.now()
      const wrapped = await sandbox.wrap('true', { cwd: keel.cwd, level: 'workspace' })
      wraps.push(performance.now() - started)
      alone.push(await spawned(wrapped.file, wrapped.args))
      await wrapped.dispose()
      bare.push(await spawned('bwrap', [...BARE, '/proc', 'true']))
    }
    const base = median(plain)
    row('bash "true", unsandboxed (median)', ms(base))
    row(
      'bash "true", workspace sandbox, hosts asked about (median)',
      ms(median(asking)),
      `${ratio(median(asking), base)} (target ≤ 2×)`,
      `+${ms(median(asking) - base)} per call`,
    )
    row(
      'bash "true", workspace sandbox, no host reachable (median)',
      ms(median(workspace)),
      ratio(median(workspace), base),
      `+${ms(median(workspace) - base)} per call`,
    )
    row(
      'bash "true", read-only sandbox (median)',
      ms(median(readOnly)),
      ratio(median(readOnly), base),
      `+${ms(median(readOnly) - base)} per call`,
    )
    row('  of which: building the sandboxed command (median)', ms(median(wraps)))
    row('the wrapped command alone, spawned directly (median)', ms(median(alone)), ratio(median(alone), base))
    row('bare bwrap, the same namespaces (median)', ms(median(bare)), ratio(median(bare), base))
    row('first sandboxed bash of the process', ms(first), `${ratio(first, median(asking))} a later one (target ≤ 1.5×)`)

    // The wrap in a repository of 20,000 files four levels down (as search.bench.ts's), started from there: the
    // runtime looked for its always-denied files by a ripgrep run over the process's cwd at every wrap.
    const tree = mkdtempSync(join(tmpdir(), 'keel-bench-sandbox-'))
    try {
      for (let i = 0; i < 20_000; i++) {
        const dir = join(tree, `src/m${Math.floor(i / 2000)}/p${Math.floor(i / 100) % 20}`)
        if (i % 100 === 0) mkdirSync(dir, { recursive: true })
        writeFileSync(join(dir, `f${i}.ts`), '')
      }
      execFileSync('git', ['init', '-q'], { cwd: tree })
      const previous = process.cwd()
      process.chdir(tree)
      const big: number[] = []
      const small: number[] = []
      try {
        for (let i = 0; i < RUNS; i++) {
          for (const [cwd, into] of [
            [tree, big],
            [keel.cwd, small],
          ] as const) {
            const started = performance.now()
            const wrapped = await sandbox.wrap('true', { cwd, level: 'workspace' })
            into.push(performance.now() - started)
            await wrapped.dispose()
          }
        }
      } finally {
        process.chdir(previous)
      }
      row(
        'wrap in a 20,000-file repository, its own process (median)',
        ms(median(big)),
        `${ratio(median(big), median(small))} a wrap in an empty folder from there`,
      )
    } finally {
      rmSync(tree, { recursive: true, force: true })
    }
  }
} finally {
  await keel.dispose()
}
