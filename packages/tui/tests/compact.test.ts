import { afterEach, expect, test } from 'vitest'
import * as compactionPlugin from '@keel/compaction'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import { KeelApp } from '../src/app.ts'
import { foldEvents } from '../src/fold.ts'
import { plainLines, RecordingTerminal } from './support.ts'

let keel: Keel | undefined
let app: KeelApp | undefined
afterEach(async () => {
  await app?.quit()
  app = undefined
  await keel?.dispose()
  keel = undefined
})

const screen = (a: KeelApp) => plainLines(a.frame(100)).join('\n')
const idle = (a: KeelApp) => waitFor(() => a.agent.status === 'idle' && a.status.runningSince === undefined, 'the turn to end', 15_000)

test('/compact summarises older turns; the marker shows live and after a cold rebuild', async () => {
  keel = await makeKeel({
    steps: [
      { text: 'first answer, long enough to be worth summarising later' },
      { text: 'second answer' },
      { text: 'Summary: two questions were asked and answered.' },
      { text: 'third answer' },
    ],
    plugins: [[compactionPlugin, { auto: false, keepTurns: 1 }]],
  })
  app = new KeelApp({ ctx: keel.ctx, terminal: new RecordingTerminal(100, 40), agent: keel.agent(), cwd: keel.cwd, modelSpec: 'scripted/test', version: '0.0.0-test' })
  void app.run()
  for (const prompt of ['one', 'two']) {
    app.submit(prompt)
    await idle(app)
  }
  app.submit('/compact')
  await waitFor(() => /Summarised \d+ messages/.test(screen(app!)), 'the compaction outcome')
  expect(screen(app)).toContain('(takes effect with your next message)')
  app.submit('three')
  await idle(app)
  await waitFor(() => screen(app!).includes('── context compacted:'), 'the marker')
  expect(screen(app)).toMatch(/── context compacted: \d+ messages summarised, ~\d+ → ~\d+ tokens ──/)
  // The summary is not shown as something the person typed, and a cold rebuild shows the same marker.
  expect(screen(app)).not.toContain('Summary: two questions')
  const cold = foldEvents(app.agent.session.events)
  expect(cold.entries.filter((entry) => entry.kind === 'compaction')).toHaveLength(1)
})

test('/compact without the compaction plugin says so', async () => {
  keel = await makeKeel({ steps: [] })
  app = new KeelApp({ ctx: keel.ctx, terminal: new RecordingTerminal(100, 40), agent: keel.agent(), cwd: keel.cwd, modelSpec: 'scripted/test', version: '0.0.0-test' })
  void app.run()
  app.submit('/compact')
  await waitFor(() => screen(app!).includes('Compaction is not loaded'), 'the warning')
})
