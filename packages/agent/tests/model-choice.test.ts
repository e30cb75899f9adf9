import { afterEach, expect, test } from 'vitest'
import { ScriptedAdapter } from '@keel/llm'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import { lastModelChoice, modelSpecOf } from '../src/index.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

test('switchModel: logged between turns (dev invariants on), used from the next turn, refused mid-turn', async () => {
  keel = await makeKeel({ steps: [{ text: 'first model' }, { text: 'slow', delayMs: 400 }] })
  const agent = keel.agent()
  await agent.prompt('one')
  const other = new ScriptedAdapter({ steps: [{ text: 'second model' }, { text: 'second again' }] }, 'other.json')
  agent.switchModel(other, 'scripted/other.json')
  expect(agent.session.last?.type).toBe('session/model')
  expect(lastModelChoice(agent.session.events)).toBe('scripted/other.json')
  expect(modelSpecOf(agent.model)).toBe('scripted/other.json')
  const result = await agent.prompt('two')
  expect(result.text).toBe('second model')
  expect(keel.model.requests).toHaveLength(1)
  expect(other.requests).toHaveLength(1)
  // The second request carries the whole conversation, the first model's answer included.
  expect(JSON.stringify(other.requests[0]!.messages)).toContain('first model')

  const running = agent.prompt('three')
  await waitFor(() => agent.status === 'running', 'the turn')
  expect(() => agent.switchModel(keel!.model, 'scripted/script')).toThrow('between turns')
  await running
  expect(agent.session.events.filter((event) => event.type === 'session/model')).toHaveLength(1)
})
