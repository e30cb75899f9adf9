// The added cost of the sandbox per bash call: the same `true` through the bash tool unsandboxed and in each sandbox
// level, interleaved in one run so machine load hits them alike. Called outside a turn, so with no spare (a turn's
// later command runs in a sandbox started for it after the one before: @keel/shell's spares.ts, measured by
// gap.bench.ts). The wrap (building the bwrap command line) is also timed on its own, and so are the floors under it:
// the wrapped command spawned directly (what the runtime's command line costs without Keel) and a bare `bwrap` with
// the same namespaces. Needs bubblewrap, socat and ripgrep.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxService } from '@keel/sandbox'
import { runCommand } from '@keel/shell'
// The runtime's own quoting; its package index does not export it.
import { quote } from '@anthropic-ai/sandbox-runtime/dist/utils/shell-quote.js'
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
    const viaShells: number[] = []
    const mounts: number[] = []
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
      // The stages of the line: bwrap with the wrap's mounts running `true`, and the line as the runtime hands it out,
      // with its two shells (src/argv.ts drops them): the runtime is started by now, so the line holds the relays.
      const end = wrapped.args.indexOf('--')
      const options = wrapped.args.slice(0, end)
      mounts.push(await spawned(wrapped.file, [...options, '--', '/usr/bin/true']))
      const [shell, , script] = wrapped.args.slice(end + 1)
      const runtimes = quote([wrapped.file, ...options, '--', shell, '-c', quote([shell, '-c', script])])
      viaShells.push(await spawned('bash', ['-c', runtimes]))
      await wrapped.dispose()
      bare.push(await spawned('bwrap', [...BARE, '/proc', 'true']))
    }
    const base = median(plain)
    row('bash "true", unsandboxed (median)', ms(base))
    row(
      'bash "true", workspace sandbox, hosts asked about, no spare (median)',
      ms(median(asking)),
      `${ratio(median(asking), base)} (a turn's later command: gap.bench.ts)`,
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
    row(
      "  the same through the runtime's own two shells (median)",
      ms(median(viaShells)),
      ratio(median(viaShells), base),
      `${ratio(median(alone), median(viaShells))} of it as Keel spawns it`,
    )
    row(
      '  bwrap with its mounts running `true`: no relays, no seccomp helper (median)',
      ms(median(mounts)),
      ratio(median(mounts), base),
    )
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

// A runtime never started (a session in read-only or plan mode, or with no permission policy): a wrap that can reach
// no host has no relays, and its line two shells, both dropped by src/argv.ts. Interleaved in one run with the plain
// call, in a fresh plugin (the one above reset the runtime when disposed).
const quiet = await makeKeel({ plugins: [[sandboxPlugin, { allowedDomains: [] }]] })
try {
  await waitFor(() => quiet.ctx.get('sandbox'), 'the sandbox service')
  const sandbox = quiet.ctx.get('sandbox') as SandboxService
  if ((await sandbox.status()).available) {
    // The CPU time of the spawned trees too (this process's reaped children, in clock ticks): steadier than wall time
    // on a loaded machine.
    const childTicks = () => {
      const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')
      return Number(fields[13]) + Number(fields[14])
    }
    const cpu = { plain: 0, direct: 0, shells: 0 }
    const spawnedIn = async (file: string, args: string[], into?: keyof typeof cpu): Promise<number> => {
      const ticks = childTicks()
      const started = performance.now()
      const outcome = await runCommand({
        file,
        args,
        cwd: quiet.cwd,
        timeoutMs: 30_000,
        signal: new AbortController().signal,
        onText() {},
        contained: true,
      })
      if (outcome.kind !== 'exited' || outcome.code !== 0) throw new Error(`${file} failed: ${JSON.stringify(outcome)}`)
      if (into) cpu[into] += childTicks() - ticks
      return performance.now() - started
    }
    const plain: number[] = []
    const direct: number[] = []
    const shells: number[] = []
    for (let i = 0; i < RUNS * 3; i++) {
      plain.push(await spawnedIn('bash', ['-c', 'true'], 'plain'))
      const wrapped = await sandbox.wrap('true', { cwd: quiet.cwd, level: 'workspace' })
      direct.push(await spawnedIn(wrapped.file, wrapped.args, 'direct'))
      // The runtime's own line for it: `bash -c "bwrap … -- bash -c 'SRT_ALLOW_NESTED_USERNS=0 apply-seccomp bash -c true'"`.
      const end = wrapped.args.indexOf('--')
      const [helper, shell, , command] = wrapped.args.slice(end + 1)
      const options = wrapped.args.slice(0, end)
      const script = `${options.at(-2)}=${options.at(-1)} ${quote([helper, shell, '-c', command])}`
      shells.push(
        await spawnedIn(
          'bash',
          ['-c', quote([wrapped.file, ...options.slice(0, -3), '--', shell, '-c', script])],
          'shells',
        ),
      )
      await wrapped.dispose()
    }
    const base = median(plain)
    row('runtime not started: `bash -c true` spawned (median)', ms(base))
    row(
      '  a no-host workspace wrap spawned as Keel spawns it (median)',
      ms(median(direct)),
      ratio(median(direct), base),
      `${ratio(median(direct), median(shells))} the runtime's own line (${ms(median(shells))}, ${ratio(median(shells), base)})`,
    )
    const tick = 1000 / 100
    const per = (ticks: number) => (ticks * tick) / (RUNS * 3)
    // bwrap does not hand its namespace's CPU time up to its parent; the two shells run outside it, so the
    // difference is theirs.
    row(
      "  the runtime's two shells, CPU per call (reaped children's time)",
      ms(per(cpu.shells - cpu.direct)),
      `${ms(per(cpu.direct))} for Keel's spawn, ${ms(per(cpu.plain))} for the plain bash`,
    )
  }
} finally {
  await quiet.dispose()
}
