// Consecutive compactions: turns whose tool output is large enough that every turn from the third on needs one.
// Each turn compacts (none is blocked by the previous turn's summary), every request stays inside the window, and
// the log keeps every original event.
import { afterEach, describe, expect, test } from 'vitest'
import * as compaction from '@keel/compaction'
import type { ScriptStep } from '@keel/llm'
import { textOf, type SessionEvent } from '@keel/session'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { requestTokens } from './support.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const WINDOW = 6400
const LINES = 440 // 440 × 20 characters of output per turn: two turns fit under the threshold, three do not fit at all

function turnSteps(n: number, summary: boolean): ScriptStep[] {
  return [
    {
      toolCalls: [
        { name: 'bash', arguments: { command: `yes output-of-turn-${String(n).padStart(2, '0')} | head -n ${LINES}` } },
      ],
    },
    ...(summary ? [{ text: `SUMMARY ${n}: the earlier turns printed long runs of output lines.` }] : []),
    { text: `Turn ${n} done.` },
  ]
}

describe('compaction on consecutive turns', () => {
  test('three turns in a row each compact, every request stays under the window, the log keeps everything', async () => {
    keel = await makeKeel({
      steps: [
        ...turnSteps(1, false),
        ...turnSteps(2, false),
        ...turnSteps(3, true),
        ...turnSteps(4, true),
        ...turnSteps(5, true),
      ],
      contextWindow: WINDOW,
      plugins: [[compaction, {}]],
    })
    const agent = keel.agent()
    for (let n = 1; n <= 5; n++) {
      const result = await agent.prompt(`turn ${n}: print the lines`)
      expect(result.reason, result.message).toBe('completed')
    }
    const events = agent.session.events

    // One compaction in each of turns 3, 4 and 5, each successful.
    const ends = events.filter((event): event is SessionEvent<'compaction/end'> => event.type === 'compaction/end')
    expect(ends.map((end) => [end.data.turn, end.data.error])).toEqual([
      [3, undefined],
      [4, undefined],
      [5, undefined],
    ])
    for (const end of ends) expect(end.data.after).toBeLessThan(0.8 * WINDOW)

    // Nothing the model was sent is over the window; without a compaction the third turn's tool output is.
    const requests = keel.model.requests
    for (const request of requests) expect(requestTokens(request)).toBeLessThanOrEqual(WINDOW)
    const summaries = requests.filter((request) => request.tools.length === 0)
    expect(summaries).toHaveLength(3)
    // Each summary request folds the previous summary in with the turn after it.
    expect(textOf(summaries[1]!.messages[0]!.content)).toContain('SUMMARY 3')
    expect(textOf(summaries[2]!.messages[0]!.content)).toContain('SUMMARY 4')
    const last = requests.at(-1)!.messages
    expect(last[0]).toMatchObject({ source: 'compaction' })
    expect(textOf(last[0]!.content)).toContain('SUMMARY 5')
    expect(
      last
        .slice(1)
        .filter((m) => m.role === 'user')
        .map((m) => textOf(m.content)),
    ).toEqual(['turn 4: print the lines', 'turn 5: print the lines'])

    // The log: every prompt, reply and tool result of all five turns, in full.
    const appended = events.filter((event) => 'surfaceOp' in event && event.surfaceOp.op === 'append')
    expect(appended.filter((event) => event.type === 'user/message')).toHaveLength(5)
    expect(appended.filter((event) => event.type === 'assistant/message')).toHaveLength(10)
    const results = events.filter((event): event is SessionEvent<'tool/result'> => event.type === 'tool/result')
    expect(results.map((event) => textOf(event.data.content).split('\n').length)).toEqual(Array(5).fill(LINES + 1))

    // Resume derives the same history.
    const derived = agent.session.deriveMessages()
    const id = agent.id
    keel.ctx.agents.close(agent)
    const { agent: resumed } = keel.ctx.agents.resume(id, { model: keel.model })
    expect(resumed.session.deriveMessages()).toEqual(derived)
    keel.ctx.agents.close(resumed)
  })
})
