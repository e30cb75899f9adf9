import { afterEach, expect, test } from 'vitest'
import { loadScript } from '@keel/llm'
import { standingPlan } from '@keel/todo'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import { KeelApp } from '../src/app.ts'
import { scriptedLabel } from '../src/index.ts'
import { plainLines, RecordingTerminal } from './support.ts'

let keel: Keel | undefined
let app: KeelApp | undefined
afterEach(async () => {
  await app?.quit()
  await keel?.dispose()
})

test('the shipped demo script runs to a finished plan and is labelled as scripted on every frame', async () => {
  const script = loadScript('demo')
  keel = await makeKeel({ steps: script.steps.map((step) => ({ ...step, delayMs: 0 })) })
  const scripted = scriptedLabel('scripted/demo')!
  app = new KeelApp({
    ctx: keel.ctx,
    terminal: new RecordingTerminal(),
    agent: keel.agent(),
    cwd: keel.cwd,
    modelSpec: 'scripted/demo',
    version: 'test',
    label: scripted.label,
    intro: scripted.intro,
  })
  void app.run('Show me around this repository')
  await waitFor(() => app!.agent.session.events.some((event) => event.type === 'turn/end'), 'the demo turn', 20_000)
  const events = app.agent.session.events
  expect(events.findLast((event) => event.type === 'turn/end')?.data).toMatchObject({ reason: 'completed' })
  expect(events.filter((event) => event.type === 'todo/write')).toHaveLength(5)
  expect(events.some((event) => event.type === 'tool/result' && event.data.isError)).toBe(false)
  expect(standingPlan(events)?.every((todo) => todo.status === 'completed')).toBe(true)
  const screen = plainLines(app.frame(100))
  expect(screen[0]).toContain('Keel')
  expect(screen[1]).toMatch(/^Scripted demo: .*no model is called/)
  expect(screen.at(-1)).toMatch(/^ SCRIPTED DEMO {2}scripted\/demo · /)
  expect(screen.join('\n')).toContain('Plan 4/4')
})
