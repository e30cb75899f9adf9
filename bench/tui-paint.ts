// One `keel -c` first paint, in a process of its own as a person gets it (tui.bench.ts runs this once per round and
// session size): a session of `turns` model turns is written to the log, then timed from reopening it (the log read,
// parsed and checked) through the app (the fold) to its first frame. Prints the figures, in ms, as one JSON line.
import { KeelApp } from '../packages/tui/src/app.ts'
import { fillSession, RecordingTerminal } from '../packages/tui/tests/support.ts'
import { makeKeel } from '../test-support/harness.ts'
import { answer } from './tui-answer.ts'

const turns = Number(process.argv[2])
const keel = await makeKeel({ steps: [] })
const written = keel.agent({ fileNow: true })
fillSession(written.session, turns, answer)
keel.ctx.agents.close(written)

const started = performance.now()
const { agent } = keel.ctx.agents.resume(written.id, { model: keel.model, cwd: keel.cwd })
const reopened = performance.now()
const terminal = new RecordingTerminal(100, 40)
const app = new KeelApp({ ctx: keel.ctx, terminal, agent, cwd: keel.cwd, modelSpec: 'scripted/test', version: '0' })
const made = performance.now()
app.frame(100)
const painted = performance.now()
await app.quit()
await keel.dispose()
process.stdout.write(
  `${JSON.stringify({ reopen: reopened - started, app: made - reopened, frame: painted - made, paint: painted - started })}\n`,
)
