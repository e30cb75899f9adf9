// Keel against a peer, codex, on the same scripted scenario (opt-in: it runs only when a codex binary is given with
// KEEL_BENCH_CODEX=/path/to/codex or found on PATH; Keel never installs it). Seven model turns, the shape of
// gap.bench.ts with one shell step: two todo steps, `echo hello 1`, three todo steps, an answer. Codex 0.171's
// `exec` offers no todo tool (`update_plan` answers "unsupported call"), so its todo steps call `get_goal`, its
// nearest offered state tool (a read of the thread's goal); its shell step is `exec_command`. Each run starts a
// fresh fake model (test-support/fake-provider.ts, OpenAI Responses, 127.0.0.1, answering at once; in a second set
// its first answer takes 0.3 s to its first token, as a real model's does) and both peers speak Responses to it:
// Keel as `openai/gpt-5.5 --base-url`, codex through a `model_providers` entry. Keel runs in auto mode (sandboxed
// bash, checkpoints) and yolo; codex with its workspace-write sandbox and with danger-full-access. Figures come
// from the fake's clock: a gap runs from the end of one answer to the arrival of the next request, so the model's
// own time is not in it.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { homedir, loadavg, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startFakeProvider } from '../test-support/fake-provider.ts'
import { answer, bash, makeRepo, type Step, todo } from './scenario.ts'
import { median, ratio, row } from './stats.ts'

const CODEX_VERSION = '0.171.0'
const root = fileURLToPath(new URL('..', import.meta.url))
const RUNS = Number(process.env.KEEL_BENCH_RUNS ?? 3)
const MODEL = 'gpt-5.5'
const steps = [todo(1), todo(2), bash(1), todo(3), todo(4), todo(5), answer]
const SHELL = 2 // the index of the shell step: its gap is gaps[SHELL]

function findCodex(): string | undefined {
  if (process.env.KEEL_BENCH_CODEX) return process.env.KEEL_BENCH_CODEX
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    try {
      accessSync(join(dir, 'codex'), constants.X_OK)
      return join(dir, 'codex')
    } catch {
      /* not here */
    }
  }
  return undefined
}

/** Keel's steps in codex's tool names: todo_write → get_goal (no todo tool offered), bash → exec_command. */
const forCodex = (step: Step): Step => ({
  ...step,
  toolCalls: step.toolCalls?.map((call) =>
    call.name === 'todo_write'
      ? { name: 'get_goal', arguments: {} }
      : call.name === 'bash'
        ? { name: 'exec_command', arguments: { cmd: call.arguments.command } }
        : call,
  ),
})

type Variant = { label: string; peer: 'keel' | 'codex'; mode: string; home: string; firstTokenMs: number }
/** The first answer's time to its first token in the second set: what Keel's early first request overlaps. */
const FIRST_TOKEN_MS = 300
type Figures = {
  mean: number
  later: number
  shell: number
  others: number
  first: number
  start: number
  wall: number
  gaps: number[]
}
type Figure = Exclude<keyof Figures, 'gaps'>
const COLUMNS: [string, Figure][] = [
  ['mean gap', 'mean'],
  ['gaps 2–6', 'later'],
  ['shell gap', 'shell'],
  ['other', 'others'],
  ['1st req', 'first'],
  ['+ gap 1', 'start'],
  ['wall', 'wall'],
]
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length

async function main(codex: string): Promise<void> {
  const probe = spawnSync(codex, ['--version'], { encoding: 'utf8' })
  if (probe.status !== 0) {
    console.log(
      `peer bench skipped: \`${codex} --version\` failed: ${probe.error?.message ?? (probe.stderr.trim() || `exit ${probe.status}`)}`,
    )
    return
  }
  const version = probe.stdout.trim()
  const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-peer-'))
  // Codex refuses to link its sandbox helper (codex-linux-sandbox) into a CODEX_HOME under the temporary directory,
  // and its workspace-write sandbox then fails every command: its homes live under ~/.cache instead.
  mkdirSync(join(homedir(), '.cache'), { recursive: true })
  const codexScratch = mkdtempSync(join(homedir(), '.cache', 'keel-bench-peer-'))
  // Anything codex sends anywhere but the fake goes through this proxy, which only notes the request and hangs up.
  const reached: string[] = []
  const trap = createServer((socket) =>
    socket.once('data', (data) => {
      reached.push(data.toString('latin1').split('\r\n')[0]!)
      socket.destroy()
    }),
  )
  await new Promise<void>((ready) => trap.listen(0, '127.0.0.1', ready))
  const trapUrl = `http://127.0.0.1:${(trap.address() as { port: number }).port}`
  const work = join(scratch, 'work')
  makeRepo(work)
  const peers: Omit<Variant, 'firstTokenMs'>[] = [
    { label: 'keel auto (sandbox, checkpoints)', peer: 'keel', mode: 'auto', home: join(scratch, 'keel-auto') },
    { label: 'codex workspace-write', peer: 'codex', mode: 'workspace-write', home: join(codexScratch, 'ws') },
    { label: 'keel yolo (checkpoints)', peer: 'keel', mode: 'yolo', home: join(scratch, 'keel-yolo') },
    { label: 'codex danger-full-access', peer: 'codex', mode: 'danger-full-access', home: join(codexScratch, 'full') },
  ]
  // Two sets, interleaved in the same rounds: the model answers at once (the issue's figure), and its first answer
  // takes FIRST_TOKEN_MS before its first token, as a real model's does (the gaps never include it).
  const sets = [0, FIRST_TOKEN_MS].map((firstTokenMs) => peers.map((peer) => ({ ...peer, firstTokenMs })))
  const variants = sets.flat()
  const base: NodeJS.ProcessEnv = { ...process.env, TERM: 'dumb', NO_COLOR: '1' }
  for (const key of Object.keys(base))
    if (/^(OPENAI|ANTHROPIC|DEEPSEEK|OPENROUTER|CODEX|KEEL)_/.test(key) || /^(https?|all|no)_proxy$/i.test(key))
      delete base[key]

  async function runOnce(variant: Variant): Promise<Figures> {
    const script = variant.peer === 'codex' ? steps.map(forCodex) : steps
    const fake = await startFakeProvider([{ ...script[0], firstTokenMs: variant.firstTokenMs }, ...script.slice(1)])
    try {
      mkdirSync(variant.home, { recursive: true })
      let command: string
      let args: string[]
      let env: NodeJS.ProcessEnv
      if (variant.peer === 'keel') {
        command = process.execPath
        args = [join(root, 'bin/keel.js'), '-p', 'go', '--model', `openai/${MODEL}`, '--base-url', `${fake.url}/v1`]
        args.push('--mode', variant.mode)
        env = { ...base, KEEL_HOME: variant.home, OPENAI_API_KEY: 'sk-fake' }
      } else {
        writeFileSync(join(variant.home, 'config.toml'), codexConfig(fake.url))
        command = codex
        // --strict-config: a key this codex does not know is an error, not a setting silently ignored.
        args = ['exec', '--strict-config', '--skip-git-repo-check', '-s', variant.mode, 'go']
        env = {
          ...base,
          HOME: variant.home,
          CODEX_HOME: variant.home,
          FAKE_API_KEY: 'sk-fake',
          HTTPS_PROXY: trapUrl,
          HTTP_PROXY: trapUrl,
          ALL_PROXY: trapUrl,
          NO_PROXY: '127.0.0.1',
        }
      }
      const start = Date.now()
      const child = spawn(command, args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] })
      const { status, output } = await finished(child, 60_000)
      const wall = Date.now() - start
      if (status !== 0) throw new Error(`${variant.label} exited ${status}: ${output.slice(-2000)}`)
      const requests = fake.requests
      if (requests.length !== steps.length)
        throw new Error(
          `${variant.label}: ${requests.length} requests for ${steps.length} steps: ${output.slice(-2000)}`,
        )
      // The request after the shell step carries the command's output: the command ran (a sandbox that cannot start
      // fails it, and the run would measure nothing).
      if (!JSON.stringify(requests[SHELL + 1]!.body).includes('hello 1'))
        throw new Error(`${variant.label}: the shell step did not print "hello 1": ${output.slice(-2000)}`)
      const gaps = requests.slice(1).map((request, i) => request.at - requests[i]!.end!)
      return {
        mean: mean(gaps),
        later: mean(gaps.slice(1)),
        shell: gaps[SHELL]!,
        others: median(gaps.filter((_, i) => i !== SHELL)),
        first: requests[0]!.at - start,
        start: requests[1]!.at - start - (requests[0]!.end! - requests[0]!.at),
        wall,
        gaps,
      }
    } finally {
      await fake.close()
    }
  }

  if (!createRequire(import.meta.url)('../bin/bundle-fresh.js').bundleIsFresh(root))
    console.log(
      "keel runs from its sources through tsx (dist/ is older than them): `npm run build` for a user's figures",
    )
  const loadBefore = loadavg()[0]!
  try {
    const results = new Map<Variant, Figures[]>(variants.map((variant) => [variant, []]))
    for (const variant of sets[0]!) await runOnce(variant) // a warm-up: each home's first run is not counted
    for (let i = 0; i < RUNS; i++)
      for (const variant of i % 2 ? [...variants].reverse() : variants)
        results.get(variant)!.push(await runOnce(variant))
    const pick = (variant: Variant, key: Figure) => median(results.get(variant)!.map((figures) => figures[key]))
    const byStep = (variant: Variant) =>
      steps.slice(1).map((_, i) => `${Math.round(median(results.get(variant)!.map((figures) => figures.gaps[i]!)))}`)
    const load = `${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`
    console.log(`${version} (${codex}); medians of ${RUNS} interleaved rounds after a warm-up; load average ${load}`)
    const cell = (value: number) => `${Math.round(value)} ms`.padStart(9)
    for (const set of sets) {
      const delay = set[0]!.firstTokenMs
      console.log(delay ? `\nthe first answer after ${delay} ms, the rest at once:` : '\nthe model answers at once:')
      row('', ...COLUMNS.map(([head]) => head.padStart(9)))
      for (const variant of set) row(variant.label, ...COLUMNS.map(([, key]) => cell(pick(variant, key))))
      for (const variant of set) row(`  gaps 1–6, ${variant.peer} ${variant.mode}`, byStep(variant).join(' / '))
      const [auto, sandboxed, yolo, full] = set as [Variant, Variant, Variant, Variant]
      for (const [keel, peer] of [
        [auto, sandboxed],
        [yolo, full],
      ] as const)
        row(
          `${keel.label.split(' (')[0]} / ${peer.label}`,
          ...COLUMNS.map(([, key]) => ratio(pick(keel, key), pick(peer, key)).padStart(9)),
        )
    }
    console.log(
      '\ntarget: the mean gap ratio at most 1×, sandboxed against sandboxed and unsandboxed against unsandboxed.\n' +
        "Keel's -p sends its first request before it boots: with a model that answers at once, the rest of its boot " +
        'lands in the first gap; a first answer that takes a while hides it. Gaps 2–6 leave it out, and "+ gap 1" ' +
        "is spawn → 2nd request less the model's answer: the whole start-up either way.",
    )
    console.log(
      reached.length
        ? `codex tried to reach (refused): ${[...new Set(reached)].join(', ')}`
        : 'codex reached nothing but the fake model',
    )
  } finally {
    trap.close()
    rmSync(scratch, { recursive: true, force: true })
    rmSync(codexScratch, { recursive: true, force: true })
  }
}

/**
 * Codex's config: the fake as a Responses provider (`wire_api = "responses"`, the only value 0.171 accepts), no
 * retries (a failure shows at once), and no update check, analytics, feedback, plugins or apps (each reaches
 * github.com or chatgpt.com at start-up; the proxy refuses whatever else tries).
 */
function codexConfig(url: string): string {
  return `model = "${MODEL}"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "${url}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false
apps = false
remote_plugin = false

[analytics]
enabled = false

[feedback]
enabled = false
`
}

function finished(child: ChildProcess, limitMs: number): Promise<{ status: number | null; output: string }> {
  let output = ''
  child.stdout!.on('data', (data) => (output += data))
  child.stderr!.on('data', (data) => (output += data))
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs)
  return new Promise((done) =>
    child.on('close', (status) => {
      clearTimeout(timer)
      done({ status, output })
    }),
  )
}

const codex = findCodex()
if (codex) await main(codex)
else
  console.log(
    `peer bench skipped: no codex. Install one outside Keel (npm i -g @openai/codex@${CODEX_VERSION}, or npm i --prefix /tmp/codex-peer @openai/codex@${CODEX_VERSION}) and run with KEEL_BENCH_CODEX=/tmp/codex-peer/node_modules/.bin/codex`,
  )
