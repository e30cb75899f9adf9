// A single tool result larger than what is left of the window is cut, with a note, in what the model is sent; the
// log keeps it whole, and later requests (and a resumed session) send the same cut.
import { afterEach, describe, expect, test } from 'vitest'
import { Type } from 'typebox'
import * as compaction from '@keel/compaction'
import type { LlmRequest, ScriptStep } from '@keel/llm'
import { textOf, type SessionEvent } from '@keel/session'
import { defineTool } from '@keel/tools'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { requestTokens } from './support.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const WINDOW = 6000
const HUGE = `FIRST-LINE\n${'middle of a very long output\n'.repeat(4000)}LAST-LINE`

function toolText(request: LlmRequest): string[] {
  return request.messages.flatMap((m) => (m.role === 'tool' ? m.content.map((block) => textOf(block.content)) : []))
}

async function start(steps: ScriptStep[]) {
  keel = await makeKeel({ steps, contextWindow: WINDOW, plugins: [[compaction, {}]] })
  keel.ctx.tools.register(
    defineTool({
      name: 'dump',
      description: 'prints a lot',
      parameters: Type.Object({}),
      async execute() {
        return HUGE
      },
    }),
  )
  return keel
}

describe('an oversized tool result', () => {
  test('is cut with a note before it is sent, stays whole on the log, and is sent cut the same way later and after resume', async () => {
    const keel = await start([
      { toolCalls: [{ id: 'big', name: 'dump', arguments: {} }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo small' } }] },
      { text: 'Read it.' },
      { text: 'Still here.' },
    ])
    const agent = keel.agent()
    const result = await agent.prompt('dump it')
    expect(result.reason, result.message).toBe('completed')

    const requests = keel.model.requests
    for (const request of requests) expect(requestTokens(request)).toBeLessThanOrEqual(WINDOW)
    const [sent] = toolText(requests[1]!)
    expect(sent!.length).toBeLessThan(HUGE.length)
    expect(sent!.startsWith('FIRST-LINE\n')).toBe(true)
    expect(sent!.endsWith('LAST-LINE')).toBe(true)
    expect(sent).toMatch(
      new RegExp(
        `\\[… \\d+ of ${HUGE.length} characters cut here: this tool result was larger than what was left of the context window\\.`,
      ),
    )
    // The next request sends the same cut, and the small result whole.
    expect(toolText(requests[2]!)).toEqual([sent, expect.stringMatching(/^small\n/)])

    // The log: the result whole, and the decision.
    const events = agent.session.events
    const logged = events.find(
      (event): event is SessionEvent<'tool/result'> => event.type === 'tool/result' && event.data.callId === 'big',
    )!
    expect(textOf(logged.data.content)).toBe(HUGE)
    const trims = events.filter((event): event is SessionEvent<'compaction/trim'> => event.type === 'compaction/trim')
    expect(trims).toHaveLength(1)
    expect(trims[0]!.data).toMatchObject({ turn: 1, callId: 'big', chars: HUGE.length })
    expect(trims[0]!.data.kept).toBeLessThan(0.8 * WINDOW * 4)
    expect(events[trims[0]!.seq - 1]).toMatchObject({ type: 'step/start', data: { turn: 1, step: 2 } })

    // Resumed: the request still carries the cut, not the whole result.
    const id = agent.id
    keel.ctx.agents.close(agent)
    const { agent: resumed } = keel.ctx.agents.resume(id, { model: keel.model })
    expect((await resumed.prompt('anything else?')).reason).toBe('completed')
    expect(toolText(keel.model.requests.at(-1)!)[0]).toBe(sent)
    keel.ctx.agents.close(resumed)
  })

  test('several large results from one reply are each cut until the request fits, the small one kept whole', async () => {
    const keel = await start([
      {
        toolCalls: [
          { id: 'one', name: 'dump', arguments: {} },
          { id: 'two', name: 'bash', arguments: { command: 'echo tiny' } },
          { id: 'three', name: 'dump', arguments: {} },
        ],
      },
      { text: 'Read them.' },
    ])
    const agent = keel.agent()
    const result = await agent.prompt('dump twice')
    expect(result.reason, result.message).toBe('completed')
    const request = keel.model.requests[1]!
    expect(requestTokens(request)).toBeLessThanOrEqual(WINDOW)
    const [one, two, three] = toolText(request)
    for (const cut of [one!, three!]) {
      expect(cut).toContain('characters cut here')
      expect(cut.startsWith('FIRST-LINE')).toBe(true)
      expect(cut.endsWith('LAST-LINE')).toBe(true)
    }
    expect(two).toMatch(/^tiny\n/)
    const trims = agent.session.events
      .filter((event) => event.type === 'compaction/trim')
      .map((event) => event.data.callId)
    expect(trims.sort()).toEqual(['one', 'three'])
  })
})
