import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'
import { costBreakdown, costLabel, costText, costUsd, requestCost, sessionCost } from '@keel/session/cost'

const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }

describe('@keel/session/cost', () => {
  test('bundles for the browser: nothing but its own file', async () => {
    const bundle = await browserBundle('@keel/session/cost')
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs).toEqual(['packages/session/src/cost.ts'])
  })

  test('prices the uncached input, cache reads, cache writes and output apart', () => {
    // 1,000 plain · $3 + 8,000 read · $0.30 + 1,000 written · $3.75 + 500 out · $15, per million.
    expect(requestCost({ input: 10_000, output: 500, cacheRead: 8000, cacheWrite: 1000 }, price)).toBeCloseTo(
      (3000 + 2400 + 3750 + 7500) / 1e6,
      12,
    )
    // A price without cache figures bills cached tokens as plain input.
    expect(requestCost({ input: 1000, output: 0, cacheRead: 1000 }, { input: 2, output: 8 })).toBeCloseTo(0.002, 12)
  })

  test('rolls a log up: own steps, compaction, subagents; per turn; unknown is never $0', () => {
    const usage = { input: 1_000_000, output: 0 }
    const events = [
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'assistant/message', data: { turn: 1, usage, costUsd: 3 } },
      { type: 'subagent/end', data: { sessionId: 'child-1234567', cost: { ...zero(), usd: 0.5, requests: 2 } } },
      { type: 'turn/start', data: { turn: 2 } },
      { type: 'compaction/end', data: { turn: 2, usage, costUsd: 1 } },
      { type: 'assistant/message', data: { turn: 2, usage } },
    ]
    const all = sessionCost(events)
    expect(all.total).toMatchObject({ usd: 4.5, requests: 5, unpriced: 1 })
    expect(costText(all.total)).toBe('$4.50 + 1 unpriced request')
    expect(costBreakdown(all)).toBe('model $3.00 + 1 unpriced request · compaction $1.00 · subagent child-12 $0.50')
    const first = sessionCost(events, { turn: 1 })
    expect(first.total).toMatchObject({ usd: 3.5, requests: 3, unpriced: 0 })
    const unknown = sessionCost([{ type: 'assistant/message', data: { turn: 1, usage } }]).total
    expect(costText(unknown)).toBe('cost unknown')
    expect(costUsd(unknown)).toBeNull()
    expect(costLabel(unknown)).toBe('cost unknown')
    expect(costText({ ...zero(), usd: 0.0042, requests: 1 })).toBe('$0.0042')
    // A free run (a scripted model) has a figure, but a status line says nothing of it.
    expect(costLabel({ ...zero(), requests: 3 })).toBeUndefined()
  })
})

function zero() {
  return { usd: 0, requests: 0, unpriced: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
}
