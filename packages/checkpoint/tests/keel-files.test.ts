// Keel's own files are not the agent's work: a rule "always" saved during a turn survives a files-only rewind of that
// turn, and no snapshot holds .keel/ (so no rewind deletes or reverts settings).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Context, Service } from 'cordis'
import { afterEach, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import * as checkpointPlugin from '../src/index.ts'
import { performRewind, previewRewind } from '../src/index.ts'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'

/** Says the sandbox is there; the permission policy is what is exercised, not the OS sandbox. */
class FakeSandbox extends Service {
  constructor(ctx: Context) {
    super(ctx, 'sandbox', true)
  }
  async status() {
    return { available: true as const }
  }
  async wrap(command: string) {
    return { file: 'bash', args: ['-c', command], dispose: async () => {} }
  }
}

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

test('"always" writes .keel/settings.local.json in a turn; a files-only rewind of that turn keeps it', async () => {
  keel = await makeKeel({
    steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'cp g.txt f.txt' } }] }, { text: 'changed' }],
    plugins: [
      [checkpointPlugin, { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      [FakeSandbox],
    ],
  })
  await waitFor(() => keel!.ctx.get('permissions') && keel!.ctx.get('checkpoints'), 'plugins')
  const cwd = keel.cwd
  mkdirSync(join(cwd, '.git'))
  writeFileSync(join(cwd, 'f.txt'), 'one\n')
  writeFileSync(join(cwd, 'g.txt'), 'two\n')
  // A settings file from before the turn, changed by the turn: it stays as the turn left it too.
  mkdirSync(join(cwd, '.keel'))
  writeFileSync(join(cwd, '.keel', 'settings.json'), '{"model":"x/y"}\n')
  keel.ctx.permissions.setAsker(async () => ({ decision: 'allow', scope: 'always' }))
  const agent = keel.agent()
  await agent.prompt('change f')
  const local = join(cwd, '.keel', 'settings.local.json')
  expect(JSON.parse(readFileSync(local, 'utf8'))).toEqual({ permissions: { allow: ['bash(cp g.txt f.txt)'] } })
  writeFileSync(join(cwd, '.keel', 'settings.json'), '{"model":"x/z"}\n')

  const source = { id: agent.id, cwd, events: agent.session.events }
  const preview = await previewRewind(keel.ctx.checkpoints, source, { kind: 'turn', toTurn: 1, scope: 'files' })
  expect(preview.plan?.changes.map((change) => change.path)).toEqual(['f.txt'])
  await performRewind({ checkpoints: keel.ctx.checkpoints, sessions: keel.ctx.sessions }, preview, {
    session: agent.session,
  })
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('one\n')
  expect(existsSync(local)).toBe(true)
  expect(JSON.parse(readFileSync(local, 'utf8'))).toEqual({ permissions: { allow: ['bash(cp g.txt f.txt)'] } })
  expect(readFileSync(join(cwd, '.keel', 'settings.json'), 'utf8')).toBe('{"model":"x/z"}\n')
})
