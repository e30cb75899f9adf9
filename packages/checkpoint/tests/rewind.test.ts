// The rewind every front door runs (src/rewind.ts), through the real agent loop: the prompts a picker offers, and
// the guarantee a confirm step relies on — a file that changed after the preview was shown is never overwritten.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as checkpointPlugin from '../src/index.ts'
import {
  NoSuchTurnError,
  performRewind,
  previewRewind,
  RewindConflictError,
  turnAt,
  turnPrompts,
} from '../src/index.ts'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const config = { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }
const bash = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command } }] })

async function twoTurns() {
  keel = await makeKeel({
    steps: [
      bash('echo one > f.txt'),
      { text: 'first' },
      bash('echo two > f.txt && echo x > g.txt'),
      { text: 'second' },
    ],
    plugins: [[checkpointPlugin, config]],
  })
  const agent = keel.agent()
  await agent.prompt('make f')
  await agent.prompt('change f')
  return { keel, agent }
}

describe('rewind', () => {
  test('turnPrompts: each prompted turn with its prompt; turnAt finds the turn of any seq', async () => {
    const { agent } = await twoTurns()
    const events = agent.session.events
    const prompts = turnPrompts(events)
    expect(prompts.map(({ turn, text }) => [turn, text])).toEqual([
      [1, 'make f'],
      [2, 'change f'],
    ])
    for (const prompt of prompts) {
      expect(events[prompt.startSeq]).toMatchObject({ type: 'turn/start', data: { turn: prompt.turn } })
      expect(events[prompt.messageSeq]!.type).toBe('user/message')
      expect(turnAt(events, prompt.messageSeq)).toBe(prompt.turn)
    }
    await expect(
      previewRewind(
        keel!.ctx.checkpoints,
        { id: agent.id, cwd: keel!.cwd, events },
        { kind: 'turn', toTurn: 3, scope: 'both' },
      ),
    ).rejects.toThrow(NoSuchTurnError)
  })

  test('a file changed after the preview refuses even a forced rewind; nothing changes and no fork is made', async () => {
    const { keel, agent } = await twoTurns()
    const source = { id: agent.id, cwd: keel.cwd, events: agent.session.events }
    const preview = await previewRewind(keel.ctx.checkpoints, source, { kind: 'turn', toTurn: 2, scope: 'both' })
    expect(preview.plan?.changes.map((change) => change.path)).toEqual(['f.txt', 'g.txt'])
    expect(preview.plan?.conflicts).toEqual([])
    writeFileSync(join(keel.cwd, 'f.txt'), 'mine\n')
    const deps = { checkpoints: keel.ctx.checkpoints, sessions: keel.ctx.sessions }
    const refused = performRewind(deps, preview, { session: agent.session, force: true, forceHint: 'look again' })
    await expect(refused).rejects.toThrow(RewindConflictError)
    await expect(refused).rejects.toThrow(
      "these files changed since the agent's last checkpoint or are ignored by git (not the agent's), and would be overwritten or deleted (some changed after the list was shown): f.txt (look again)",
    )
    expect(readFileSync(join(keel.cwd, 'f.txt'), 'utf8')).toBe('mine\n')
    expect(existsSync(join(keel.cwd, 'g.txt'))).toBe(true)
    expect(keel.ctx.sessions.list(keel.cwd).filter((s) => s.forkedFrom)).toEqual([])
    expect(agent.session.events.some((e) => e.type === 'checkpoint/restore')).toBe(false)

    // Shown and agreed to: the same rewind goes through, forks, and records the fork on the original.
    const again = await previewRewind(keel.ctx.checkpoints, source, { kind: 'turn', toTurn: 2, scope: 'both' })
    expect(again.plan?.conflicts).toEqual(['f.txt'])
    const outcome = await performRewind(deps, again, { session: agent.session, force: true })
    expect(outcome.overwrote).toEqual(['f.txt'])
    expect(readFileSync(join(keel.cwd, 'f.txt'), 'utf8')).toBe('one\n')
    expect(existsSync(join(keel.cwd, 'g.txt'))).toBe(false)
    expect(agent.session.events.at(-1)).toMatchObject({
      type: 'checkpoint/restore',
      data: { toTurn: 2, fork: outcome.fork },
    })
    expect(keel.ctx.sessions.read(outcome.fork!).header.forkedFrom).toEqual({
      sessionId: agent.id,
      seq: again.forkBeforeSeq,
    })
  })

  test('a conversation-only rewind needs neither checkpoints nor an open session', async () => {
    const { keel, agent } = await twoTurns()
    const preview = await previewRewind(
      undefined,
      { id: agent.id, cwd: keel.cwd, events: agent.session.events },
      { kind: 'turn', toTurn: 2, scope: 'conversation' },
    )
    expect(preview.plan).toBeUndefined()
    const outcome = await performRewind({ checkpoints: undefined, sessions: keel.ctx.sessions }, preview)
    expect(outcome.changes).toEqual([])
    const fork = keel.ctx.sessions.read(outcome.fork!)
    expect(turnPrompts(fork.events).map((p) => p.text)).toEqual(['make f'])
    expect(readFileSync(join(keel.cwd, 'f.txt'), 'utf8')).toBe('two\n')
  })
})
