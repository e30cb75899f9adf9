// A prompt's images go on the log once and to a vision model; a model without vision refuses them before anything
// is logged or sent.
import { afterEach, expect, test } from 'vitest'
import { ScriptedAdapter } from '@keel/llm'
import type { ContentBlock } from '@keel/session'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const image: ContentBlock = { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=', name: 'shot.png' }
const prompt: ContentBlock[] = [{ type: 'text', text: 'what is this?' }, image]

test('a model without vision refuses a prompt with an image in one line: nothing logged, nothing sent', async () => {
  keel = await makeKeel({ steps: [{ text: 'unused' }] })
  const agent = keel.agent()
  await expect(agent.prompt(prompt)).rejects.toThrow(
    'scripted/script is not known to take images (the model catalog), so nothing was sent',
  )
  expect(() => agent.send(prompt)).toThrow('is not known to take images')
  expect(agent.session.events).toEqual([])
  expect(keel.model.requests).toEqual([])
  // Text alone still goes.
  expect((await agent.prompt('just text')).text).toBe('unused')
})

test('a vision model is sent the image, stored once on the log with its name', async () => {
  keel = await makeKeel()
  const model = new ScriptedAdapter({ steps: [{ text: 'a cat' }, { text: 'still a cat' }], vision: true })
  const agent = keel.agent({ model })
  await agent.prompt(prompt)
  await agent.prompt('and now?')
  const logged = agent.session.events.filter((event) => JSON.stringify(event).includes('iVBORw0KGgo='))
  expect(logged.map((event) => event.type)).toEqual(['user/message'])
  expect(JSON.stringify(logged[0]!.data)).toContain('"name":"shot.png"')
  // Both requests carry it: history is derived from the log.
  expect(model.requests.map((request) => request.messages[0]!.content[1])).toEqual([image, image])
})
