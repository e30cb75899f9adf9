import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { alive, killQuietly, pidsIn, waitUntilGone } from '../../../test-support/processes.ts'

let keel: Keel | undefined
let pids: number[] = []
afterEach(async () => {
  killQuietly(pids)
  pids = []
  await keel?.dispose()
  keel = undefined
})

describe('cancelling a turn ends every process its bash call started', () => {
  test("a grandchild in the shell's group and one that escaped it with setsid", async () => {
    // Both sleeps outlive a plain kill of the shell: one is only a child of the shell, the other left its group.
    const command = "sleep 300 & echo $! > pids; setsid sh -c 'echo $$ >> pids; exec sleep 300' & wait"
    keel = await makeKeel({ steps: [{ toolCalls: [{ name: 'bash', arguments: { command } }] }] })
    const agent = keel.agent()
    const turn = agent.prompt('start two sleepers')
    const file = join(keel.cwd, 'pids')
    await waitFor(
      () => existsSync(file) && pidsIn(readFileSync(file, 'utf8')).length === 2,
      'both grandchildren to start',
    )
    pids = pidsIn(readFileSync(file, 'utf8'))
    expect(pids.every(alive)).toBe(true)
    agent.cancel()
    const result = await turn
    expect(result.reason).toBe('aborted')
    await waitUntilGone(pids)
    const events = agent.session.events
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    const [callResult] = events.filter((e) => e.type === 'tool/result')
    expect(textOfContent(callResult!.data.content)).toBe('[cancelled by the user]')
  })
})
