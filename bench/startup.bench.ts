// Start-up figures of the shipped composition, each beside bare Node measured in the same loop (runs interleaved,
// so a load spike from elsewhere hits both): `keel --version`, `keel --help`, `keel -p` spawn → first model
// request, `keel -p` spawn → exit when the model takes 300 ms to its first token (what a person waits for), and
// `keel serve` spawn → its page answered. Prints medians and ratios; asserts nothing.
// KEEL_BENCH_COMPARE=<dir>[,<dir>…] runs the keel figures of other built checkouts in the same loop (say, the code
// before a change, checked out elsewhere with its own dist/), so both see the same load.
//
// NODE_EXTRA_CA_CERTS makes Node 20 parse its whole root store and the named file before any JavaScript runs: with
// a 144-certificate bundle that is most of what bare Node costs (about 80 of 100 ms here). Every node process pays
// it, keel too, so when it is set the loop also measures bare Node and the first request without it.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startFakeProvider } from '../test-support/fake-provider.ts'
import { median, ms, ratio, row } from './stats.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const checkouts = [root, ...(process.env.KEEL_BENCH_COMPARE?.split(',').filter(Boolean) ?? [])]
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-startup-'))
// The agent works in its own folder: with KEEL_HOME inside it, each run would checkpoint the sessions and
// checkpoint repository of the runs before it, and the figures would grow run by run.
const work = join(scratch, 'work')
mkdirSync(work)
const env: NodeJS.ProcessEnv = { ...process.env, KEEL_HOME: join(scratch, 'home') }
const { NODE_EXTRA_CA_CERTS: extraCaCerts, ...envWithoutCerts } = env
const RUNS = Number(process.env.KEEL_BENCH_RUNS ?? 9)

/** Spawns node with `args`; resolves with the wall time to exit. */
function run(args: string[], runEnv: NodeJS.ProcessEnv = env): Promise<number> {
  const started = performance.now()
  const child = spawn(process.execPath, args, { cwd: work, env: runEnv, stdio: 'ignore' })
  return new Promise((done) => child.on('close', () => done(performance.now() - started)))
}

/** Spawns `keel serve --port 0`, and resolves with the time until its page answered 200; then stops it. */
async function serveReady(keelBin: string): Promise<number> {
  const started = performance.now()
  const child = spawn(process.execPath, [keelBin, 'serve', '--port', '0', '--model', 'scripted/demo'], {
    cwd: work,
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  let out = ''
  const url = await new Promise<string>((done, fail) => {
    child.stdout.on('data', (chunk) => {
      out += String(chunk)
      const found = /https?:\/\/\S+/.exec(out)
      if (found) done(found[0])
    })
    child.on('close', () => fail(new Error(`keel serve exited before printing its URL: ${out}`)))
  })
  const response = await fetch(url)
  await response.text()
  const elapsed = performance.now() - started
  if (response.status !== 200) throw new Error(`keel serve answered ${response.status}`)
  const closed = new Promise((done) => child.on('close', done))
  child.kill('SIGTERM')
  await closed
  return elapsed
}

/** A model that thinks this long before its first token (print mode's boot overlaps it; see first-request.ts). */
const THINKING_MS = 300

/** Spawn → exit of `keel -p` against a fake OpenAI-compatible server that thinks THINKING_MS before answering. */
async function answered(keelBin: string): Promise<number> {
  const fake = await startFakeProvider([{ text: 'ok', firstTokenMs: THINKING_MS }])
  const elapsed = await run([keelBin, '-p', 'hi', '--model', 'openai-compatible/bench', '--base-url', `${fake.url}/v1`])
  await fake.close()
  return elapsed
}

/** Spawn → the first request of `keel -p` against a fake OpenAI-compatible server, or undefined if none came. */
async function firstRequest(keelBin: string, runEnv: NodeJS.ProcessEnv): Promise<number | undefined> {
  const fake = await startFakeProvider([{ text: 'ok' }])
  const started = Date.now()
  await run([keelBin, '-p', 'hi', '--model', 'openai-compatible/bench', '--base-url', `${fake.url}/v1`], runEnv)
  await fake.close()
  return fake.requests[0] && fake.requests[0].at - started
}

const FIGURES = ['version', 'help', 'first', 'answered', 'serve', 'firstWithoutCerts'] as const
const nodeSamples: number[] = []
const nodeWithoutCerts: number[] = []
const samples = checkouts.map(() => ({
  version: [] as number[],
  help: [] as number[],
  first: [] as number[],
  answered: [] as number[],
  serve: [] as number[],
  firstWithoutCerts: [] as number[],
}))
const load = loadavg()[0]!
for (let i = 0; i < RUNS; i++) {
  nodeSamples.push(await run(['-e', '']))
  if (extraCaCerts) nodeWithoutCerts.push(await run(['-e', ''], envWithoutCerts))
  // Each run starts with a different checkout: whichever goes first after bare Node was measured slower.
  for (let turn = 0; turn < checkouts.length; turn++) {
    const index = (i + turn) % checkouts.length
    const keelBin = join(checkouts[index]!, 'bin/keel.js')
    const mine = samples[index]!
    mine.version.push(await run([keelBin, '--version']))
    mine.help.push(await run([keelBin, '--help']))
    const first = await firstRequest(keelBin, env)
    if (first !== undefined) mine.first.push(first)
    mine.answered.push(await answered(keelBin))
    mine.serve.push(await serveReady(keelBin))
    const withoutCerts = extraCaCerts ? await firstRequest(keelBin, envWithoutCerts) : undefined
    if (withoutCerts !== undefined) mine.firstWithoutCerts.push(withoutCerts)
  }
}
const node = median(nodeSamples)
const LABELS: Record<(typeof FIGURES)[number], string> = {
  version: 'keel --version',
  help: 'keel --help',
  first: 'keel -p: spawn → first model request',
  answered: `keel -p: spawn → exit, model thinking ${THINKING_MS} ms`,
  serve: 'keel serve: spawn → page served',
  firstWithoutCerts: 'keel -p: first request, without NODE_EXTRA_CA_CERTS',
}
row(`load average ${load.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}, ${RUNS} runs each`, '')
row('node -e "" (baseline)', ms(node))
const nodeNoCerts = median(nodeWithoutCerts)
if (extraCaCerts) row('node -e "" without NODE_EXTRA_CA_CERTS', ms(nodeNoCerts))
for (const figure of FIGURES)
  for (const [index, checkout] of checkouts.entries()) {
    if (figure === 'firstWithoutCerts' && !extraCaCerts) continue
    const value = median(samples[index]![figure])
    const label = checkouts.length > 1 ? `${LABELS[figure]} (${checkout})` : LABELS[figure]
    if (figure === 'firstWithoutCerts') row(label, ms(value), ratio(value, nodeNoCerts), 'vs bare node without it')
    else row(label, ms(value), ratio(value, node), 'vs bare node')
  }
rmSync(scratch, { recursive: true, force: true })
