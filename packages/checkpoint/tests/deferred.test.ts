// The re-check after a turn's last step is not waited for at the turn's end. These tests hold that re-check open (a
// `git` on PATH that waits while a file exists) or make it fail, and check that the turn still ends, that the next
// turn and a rewind wait for it, and that every rewind point stays exact whether it landed, was overtaken or lost.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import type { Agent } from '@keel/agent'
import type { SessionEvent } from '@keel/session'
import * as checkpointPlugin from '../src/index.ts'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
let bin: string | undefined
const path = process.env.PATH
afterEach(async () => {
  if (bin) rmSync(join(bin, 'hold'), { force: true })
  await keel?.dispose()
  keel = undefined
  process.env.PATH = path
  if (bin) rmSync(bin, { recursive: true, force: true })
  bin = undefined
})

const config = { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }
const snapshots = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'checkpoint/snapshot').map((e) => (e as SessionEvent<'checkpoint/snapshot'>).data)
const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command } }] })

/**
 * A `git` first on PATH. While `<bin>/hold` exists, an `add` waits (up to 30 s) before it runs, and says so in
 * `<bin>/holding`; while `<bin>/fail` exists, an `add` exits 137, as a git killed mid-snapshot would (so the
 * re-check begun as the tool ended fails, and so does the one its snapshot then begins).
 */
function heldGit(): { hold: string; holding: string; fail: string } {
  bin = mkdtempSync(join(tmpdir(), 'keel-git-held-'))
  const hold = join(bin, 'hold')
  const fail = join(bin, 'fail')
  const holding = join(bin, 'holding')
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
  writeFileSync(
    join(bin, 'git'),
    `#!/bin/sh
case " $* " in *" add "*)
  if [ -e '${fail}' ]; then exit 137; fi
  if [ -e '${hold}' ]; then touch '${holding}'; fi
  i=0; while [ -e '${hold}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done;;
esac
exec '${real}' "$@"
`,
    { mode: 0o755 },
  )
  process.env.PATH = `${bin}:${path}`
  return { hold, holding, fail }
}

async function rewindTo(agent: Agent, turn: number, force = false): Promise<void> {
  const plan = await keel!.ctx.checkpoints.plan(agent.session.events, keel!.cwd, turn, agent.id)
  await keel!.ctx.checkpoints.apply(plan, keel!.cwd, agent.session, { force })
}
const fileNow = () => (existsSync(join(keel!.cwd, 'f.txt')) ? readFileSync(join(keel!.cwd, 'f.txt'), 'utf8') : null)

describe('the re-check after the last step', () => {
  test('the turn ends while it is held; closing the agent lets it land, after turn/end', async () => {
    const { hold } = heldGit()
    keel = await makeKeel({
      // The command holds the next `git add`: the re-check the answer's request starts.
      steps: [bash(`echo v1 > f.txt; touch '${hold}'`), { text: 'done' }],
      plugins: [[checkpointPlugin, config]],
    })
    const agent = keel.agent()
    // Were the turn's end waiting for the re-check, this would not resolve until the hold is gone.
    const result = await agent.prompt('go')
    expect(result.reason).toBe('completed')
    expect(existsSync(hold)).toBe(true)
    expect(agent.session.events.at(-1)?.type).toBe('turn/end')
    expect(snapshots(agent.session.events).map((s) => s.kind)).toEqual(['turn-start'])
    // What a door does before closing the agent (print mode as it exits): the re-check finishes and lands.
    const closing = keel.ctx.parallel('agent/before-close', agent)
    rmSync(hold)
    await closing
    const types = agent.session.events.map((e) => e.type)
    expect(types.slice(-2)).toEqual(['turn/end', 'checkpoint/snapshot'])
    expect(snapshots(agent.session.events).map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [1, 'change'],
    ])
    // It is what the agent last saw: a rewind now has no conflict for the agent's own change.
    const plan = await keel.ctx.checkpoints.plan(agent.session.events, keel.cwd, 1, agent.id)
    expect(plan.conflicts).toEqual([])
  }, 60_000)

  test('a turn that starts while it is held waits for it; both rewind points stay exact', async () => {
    const { hold, holding } = heldGit()
    keel = await makeKeel({
      steps: [bash(`echo v1 > f.txt; touch '${hold}'`), { text: 'one' }, bash('echo v2 > f.txt'), { text: 'two' }],
      plugins: [[checkpointPlugin, config]],
    })
    const agent = keel.agent()
    await agent.prompt('one')
    // The re-check after turn 1's `bash` is under way (its `git add` held) when turn 2 begins.
    await waitFor(() => existsSync(holding), 'the held git add')
    const second = agent.prompt('two')
    await waitFor(() => agent.session.events.some((e) => e.type === 'turn/start' && e.data.turn === 2), 'turn 2')
    // Turn 2's snapshot is queued behind the held re-check, and its `bash` behind that snapshot.
    expect(fileNow()).toBe('v1\n')
    rmSync(hold)
    await second
    await keel.ctx.parallel('agent/before-close', agent)
    expect(fileNow()).toBe('v2\n')
    // Turn 1's change was found after turn 2 began: turn 2's start records that tree (no turn-1 event inside turn 2).
    expect(snapshots(agent.session.events).map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [2, 'turn-start'],
      [2, 'change'],
    ])
    await rewindTo(agent, 2)
    expect(fileNow()).toBe('v1\n')
    await rewindTo(agent, 1, true)
    expect(fileNow()).toBe(null)
  }, 60_000)

  test('one lost (its git killed) makes no rewind wrong: the next turn start covers it', async () => {
    const { fail } = heldGit()
    keel = await makeKeel({
      steps: [bash(`echo v1 > f.txt; touch '${fail}'`), { text: 'one' }, bash('echo v2 > f.txt'), { text: 'two' }],
      plugins: [[checkpointPlugin, config]],
    })
    const notices: string[] = []
    keel.ctx.on('keel/notice', (notice) => {
      if (notice.source === 'checkpoint') notices.push(notice.text)
    })
    const agent = keel.agent()
    await agent.prompt('one')
    await keel.ctx.parallel('agent/before-close', agent)
    expect(notices).toEqual([expect.stringMatching(/^checkpoint skipped: git add failed/)])
    rmSync(fail)
    expect(snapshots(agent.session.events).map((s) => s.kind)).toEqual(['turn-start'])
    // The agent's last change is unknown to the log, so a rewind now treats it as the person's: refused, not lost.
    await expect(keel.ctx.checkpoints.plan(agent.session.events, keel.cwd, 1, agent.id)).resolves.toMatchObject({
      conflicts: ['f.txt'],
    })
    await agent.prompt('two')
    await keel.ctx.parallel('agent/before-close', agent)
    expect(snapshots(agent.session.events).map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [2, 'turn-start'],
      [2, 'change'],
    ])
    await rewindTo(agent, 2)
    expect(fileNow()).toBe('v1\n')
    await rewindTo(agent, 1, true)
    expect(fileNow()).toBe(null)
  }, 60_000)
})
