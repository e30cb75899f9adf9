// Tool output that tells the truth, through the real loop: terminal codes never reach the model or the log, and a
// command's end (exit code, timeout, kill) rides on the result's details, where resultStatus decides "failed".
import { afterEach, expect, test } from 'vitest'
import { resultStatus, type SessionEvent } from '@keel/session'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const bash = (command: string, id: string, timeout?: number) => ({
  toolCalls: [{ id, name: 'bash', arguments: { command, ...(timeout ? { timeout } : {}) } }],
})

test('SGR colours and an OSC title are gone from the request and the log; exit 3, a timeout and a kill are failures', async () => {
  keel = await makeKeel({
    steps: [
      bash(String.raw`printf '\033]0;my title\007\033[31mred\033[0m and \033[1;32mgreen\033[m\n'; exit 3`, 'c1'),
      bash('sleep 5', 'c2', 1),
      bash('kill -9 $$', 'c3'),
      bash('echo fine', 'c4'),
      { text: 'done' },
    ],
  })
  const agent = keel.agent()
  await agent.prompt('go')
  const results = agent.session.events.filter((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>[]
  const first = textOfContent(results[0]!.data.content)
  expect(first).toMatch(/^red and green\n\[exit code 3 · /)
  // What the model was sent for that call, in the next request.
  const sent = JSON.stringify(keel.model.requests[1]!.messages.at(-1))
  expect(sent).toContain('red and green')
  expect(sent).not.toMatch(/\\u001b|\u001b|\\u0007|my title/)
  expect(results.map((r) => r.data.details)).toEqual([
    { kind: 'command', exit: { kind: 'exited', code: 3 } },
    { kind: 'command', exit: { kind: 'timeout', seconds: 1 } },
    { kind: 'command', exit: { kind: 'killed', signal: 'SIGKILL' } },
    { kind: 'command', exit: { kind: 'exited', code: 0 } },
  ])
  expect(results.map((r) => resultStatus(r.data))).toEqual(['failed', 'failed', 'failed', 'ok'])
}, 30_000)
