// Agent spine figures: a 7-step loop end to end with its peak RSS, and per-step overhead as the session grows.
// Cold start (spawn → first request) is in startup.bench.ts.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startFakeProvider } from '../test-support/fake-provider.ts'
import { makeKeel } from '../test-support/harness.ts'
import { median, ms, ratio, row } from './stats.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-agent-'))
// The agent works in its own folder: with KEEL_HOME inside it, each run would checkpoint the sessions and
// checkpoint repository of the runs before it, and the figures would grow run by run.
const work = join(scratch, 'work')
mkdirSync(work)
const rssProbe = join(scratch, 'rss.mjs')
writeFileSync(
  rssProbe,
  `import { writeFileSync } from 'node:fs'\nprocess.on('exit', () => writeFileSync(process.env.KEEL_RSS_FILE, String(process.resourceUsage().maxRSS)))\n`,
)

function run(
  args: string[],
  env: Record<string, string> = {},
  onStdout?: (text: string) => void,
): Promise<{ code: number | null; ms: number }> {
  const started = performance.now()
  const child = spawn(process.execPath, args, {
    cwd: work,
    env: { ...process.env, KEEL_HOME: join(scratch, 'home'), ...env },
    stdio: ['ignore', 'pipe', process.env.KEEL_BENCH_DEBUG ? 'inherit' : 'ignore'],
  })
  child.stdout.on('data', (d) => onStdout?.(String(d)))
  return new Promise((done) => child.on('close', (code) => done({ code, ms: performance.now() - started })))
}

const keelBin = join(root, 'bin/keel.js')
const RUNS = 7

// 1. A 7-step tool loop, whole run, and peak RSS: scripted with plain-word commands (`echo 0`, split on spaces) and
// with shell syntax (`true && echo 0`, which loads the shell parser), then the plain loop from a fake provider on
// 127.0.0.1 through the OpenAI-compatible adapter.
async function toolLoop(label: string, command: (i: number) => string, overHttp = false): Promise<void> {
  const steps = []
  for (let i = 0; i < 6; i++)
    steps.push({
      toolCalls: [
        {
          name: i % 2 ? 'todo_write' : 'bash',
          arguments: i % 2 ? { todos: [{ content: `step ${i}`, status: 'in_progress' }] } : { command: command(i) },
        },
      ],
    })
  steps.push({ text: 'done' })
  const script = join(scratch, `seven-${label.replace(/\W+/g, '-')}.json`)
  writeFileSync(script, JSON.stringify({ steps }))
  const walls: number[] = []
  const rss: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const rssFile = join(scratch, `rss-${i}`)
    // Over HTTP: the same replies streamed by the fake provider, through the OpenAI-compatible adapter.
    const fake = overHttp ? await startFakeProvider(structuredClone(steps)) : undefined
    const model = fake
      ? ['--model', 'openai-compatible/bench', '--base-url', `${fake.url}/v1`]
      : ['--model', `scripted/${script}`]
    walls.push((await run([`--import=${rssProbe}`, keelBin, '-p', 'go', ...model], { KEEL_RSS_FILE: rssFile })).ms)
    await fake?.close()
    rss.push(Number(readFileSync(rssFile, 'utf8')) / 1024)
  }
  row(`keel -p: 7-step tool loop (${label}), wall (median)`, ms(median(walls)))
  row(`keel -p: peak RSS (${label}, median)`, `${median(rss).toFixed(1)} MB`)
}
await toolLoop('scripted, echo N', (i) => `echo ${i}`)
await toolLoop('scripted, true && echo N', (i) => `true && echo ${i}`)
await toolLoop('OpenAI-compatible over HTTP, echo N', (i) => `echo ${i}`, true)

// 2. Harness overhead per step as the session grows (in process, scripted model, no tools).
{
  const per: Record<number, number> = {}
  for (const length of [10, 1_000, 10_000]) {
    const keel = await makeKeel({
      dev: false,
      recordRequests: false,
      steps: Array.from({ length: length + 50 }, (_, i) => ({ text: `answer ${i}` })),
    })
    const agent = keel.agent({ persist: false })
    // Grow the session to `length` steps (one step per turn), then time the next 50 turns.
    for (let i = 0; i < length; i++) await agent.prompt(`q${i}`)
    const started = performance.now()
    for (let i = 0; i < 50; i++) await agent.prompt(`timed ${i}`)
    per[length] = (performance.now() - started) / 50
    await keel.dispose()
  }
  for (const [length, value] of Object.entries(per))
    row(`per-step overhead at ${length} steps`, ms(value), ratio(value, per[10]!), 'vs 10 steps')
}

rmSync(scratch, { recursive: true, force: true })
