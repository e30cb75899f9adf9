// `npm run demo` opens the TUI in ask mode: its commands only read, so they must run in the real sandbox without a
// single question. Needs bubblewrap (CI installs it; there a missing one fails this test instead of skipping it).
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, expect, test } from 'vitest'
import { loadScript } from '@keel/llm'
import * as permissionsPlugin from '@keel/permissions'
import * as sandboxPlugin from '@keel/sandbox'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const HAS_BWRAP = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-user', 'true']).status === 0
const runs = HAS_BWRAP || process.env.CI === 'true'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

test.runIf(runs)(
  'the demo script runs in ask mode, sandboxed, without asking anything',
  async () => {
    const script = loadScript('demo')
    keel = await makeKeel({
      steps: script.steps.map((step) => ({ ...step, delayMs: 0 })),
      plugins: [
        [sandboxPlugin, { allowedDomains: [] }],
        [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      ],
    })
    await waitFor(() => keel!.ctx.get('permissions') && keel!.ctx.get('sandbox'), 'plugins')
    const asked: string[] = []
    keel.ctx.permissions.setAsker(async (ask) => {
      asked.push(ask.summary)
      return { decision: 'deny', scope: 'once' }
    })
    const agent = keel.agent({ cwd: REPO })
    expect((await agent.prompt('Show me around this repository')).reason).toBe('completed')
    const events = agent.session.events
    expect(asked).toEqual([])
    expect(events.filter((e) => e.type === 'tool/result' && e.data.isError)).toEqual([])
    const decisions = events.filter((e) => e.type === 'permission/decision').map((e) => e.data)
    expect(decisions.length).toBeGreaterThanOrEqual(3)
    expect(decisions.every((d) => d.decision === 'allow' && d.scope === 'mode' && d.mode === 'ask')).toBe(true)
    const outputs = events.filter((e) => e.type === 'tool/result').map((e) => JSON.stringify(e.data.content))
    expect(outputs.some((text) => text.includes('permissions'))).toBe(true)
  },
  60_000,
)
