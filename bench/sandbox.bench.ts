// The added cost of the sandbox per bash call: the same `true` through the bash tool unsandboxed and in each sandbox
// level, interleaved in one run so machine load hits them alike; the wrap (building the bwrap command line) is also
// timed on its own. Needs bubblewrap, socat and ripgrep.
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxService } from '@keel/sandbox'
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
    for (let i = 0; i < RUNS; i++) {
      plain.push(await call(undefined))
      asking.push(await call('workspace', true))
      workspace.push(await call('workspace'))
      readOnly.push(await call('read-only'))
      const started = performance.now()
      const wrapped = await sandbox.wrap('true', { cwd: keel.cwd, level: 'workspace' })
      wraps.push(performance.now() - started)
      await wrapped.dispose()
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
    row('first sandboxed bash of the process', ms(first), `${ratio(first, median(asking))} a later one (target ≤ 1.5×)`)
  }
} finally {
  await keel.dispose()
}
