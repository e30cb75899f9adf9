// The gap between model turns in a scripted `keel -p` (the scripted model answers at once, so the time from one
// assistant/message to the next is Keel's own: checkpoint wait, permission check, the tool, the next request):
// two todo_write steps, four `bash echo` steps, three more todo_write, an answer, in three variants interleaved:
// auto (sandbox and checkpoints on, the default of -p), yolo (no sandbox), and yolo with checkpoints off, the
// baseline. Also the first sandboxed bash of the process against the later ones, with an instant model and with a
// first answer that reasons for 0.3 s (the time the sandbox's warm-up gets in a real run).
// KEEL_BENCH_COMPARE=<another checkout> runs that checkout's `bin/keel.js` too, interleaved in the same run (a
// before/after, set up as checkpoint.bench.ts says), and prints its figures against the same baseline.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { answer, bash, makeRepo, todo } from './scenario.ts'
import { median, ms, ratio, row } from './stats.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const RUNS = Number(process.env.KEEL_BENCH_RUNS ?? 3)
const checkouts = [root, ...(process.env.KEEL_BENCH_COMPARE ? [process.env.KEEL_BENCH_COMPARE] : [])]
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-gap-'))
const work = join(scratch, 'work')
makeRepo(work)
const steps = [todo(1), todo(2), bash(1), bash(2), bash(3), bash(4), todo(3), todo(4), todo(5), answer]
const script = join(scratch, 'script.json')
writeFileSync(script, JSON.stringify({ steps }))
// The same, but the first answer reasons for about 0.3 s first, as a reasoning model does (the gaps, measured from
// one answer to the next, do not include it): the sandbox's warm-up starts with the reasoning and has that long.
const thinking = join(scratch, 'thinking.json')
const reasons = { ...steps[0], reasoning: 'thinking it over', delayMs: 100 }
writeFileSync(thinking, JSON.stringify({ steps: [reasons, ...steps.slice(1)] }))

// A model that takes 150 ms to answer each step after the first (a fast hosted model is slower): what a sandboxed
// command costs when the sandbox for it could be started while the model wrote the call (@keel/shell's spares.ts).
const paced = join(scratch, 'paced.json')
writeFileSync(
  paced,
  JSON.stringify({ steps: steps.map((step, i) => (i === 0 ? step : { ...step, reasoning: '.', delayMs: 150 })) }),
)

type Variant = { label: string; mode: string; checkpoints: boolean; script?: string }
const variants: Variant[] = [
  { label: 'auto (sandbox, checkpoints)', mode: 'auto', checkpoints: true },
  { label: 'yolo (checkpoints)', mode: 'yolo', checkpoints: true },
  { label: 'yolo, checkpoints off', mode: 'yolo', checkpoints: false },
  { label: 'auto, a first answer that reasons', mode: 'auto', checkpoints: true, script: thinking },
  { label: 'auto, answers after 150 ms', mode: 'auto', checkpoints: true, script: paced },
  { label: 'yolo, checkpoints off, answers after 150 ms', mode: 'yolo', checkpoints: false, script: paced },
]
type Figures = {
  mean: number
  firstBash: number
  laterBash: number
  end: number
  firstWait: number
  laterWait: number
  /** A later `bash` call → its result (calls 2–4 of the turn). */
  laterRun: number
  /** Each tool step's answer → its last result, the mean: Keel's part of a gap, whatever the model's pace. */
  work: number
  /** CPU time of the run, Keel and every process it reaped (ms, 10 ms ticks). */
  cpu: number
}

/** This process's reaped children's user and system time, in clock ticks (100 a second). */
function childTicks(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')
  return Number(fields[13]) + Number(fields[14])
}
function runOnce(variant: Variant, n: number, checkout: string): Figures {
  const home = join(scratch, `home-${variants.indexOf(variant)}-${n}-${checkouts.indexOf(checkout)}`)
  mkdirSync(home)
  // Each run has a home of its own (its session log is read back), but a person's runs share one: what a run keeps in
  // $KEEL_HOME/cache (the sandbox probe's answer) is handed to the checkout's next run.
  const kept = join(scratch, `cache-${checkouts.indexOf(checkout)}`)
  if (existsSync(kept)) cpSync(kept, join(home, 'cache'), { recursive: true })
  if (!variant.checkpoints) writeFileSync(join(home, 'settings.json'), '{"checkpoint":{"enabled":false}}')
  const ticks = childTicks()
  const run = spawnSync(
    process.execPath,
    [
      join(checkout, 'bin/keel.js'),
      '-p',
      'go',
      '--model',
      `scripted/${variant.script ?? script}`,
      '--mode',
      variant.mode,
    ],
    { cwd: work, env: { ...process.env, KEEL_HOME: home }, encoding: 'utf8' },
  )
  if (run.status !== 0) throw new Error(`keel exited ${run.status}: ${run.stderr}`)
  // Keel's CPU and that of every process it reaped (git, the sandboxes, spares left unused included), in ms.
  const cpu = (childTicks() - ticks) * 10
  if (existsSync(join(home, 'cache'))) cpSync(join(home, 'cache'), kept, { recursive: true })
  const dir = join(home, 'sessions')
  const file = readdirSync(dir, { recursive: true, encoding: 'utf8' }).find((name) => name.endsWith('.jsonl'))!
  const events = readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; time: number })
  const answers = events.filter((event) => event.type === 'assistant/message').map((event) => event.time)
  const gaps = answers.slice(1).map((time, i) => time - answers[i]!)
  // Steps 3–6 are the bash calls: the gaps after their answers are gaps[2..5].
  const bashGaps = gaps.slice(2, 6)
  const end = events.find((event) => event.type === 'turn/end')!.time - answers.at(-1)!
  // Answer → tool call of each bash (calls 3–6): what the tool waited for before it began (the checkpoint's capture,
  // the permission check, the main thread busy with the sandbox's warm-up).
  const calls = events.filter((event) => event.type === 'tool/call').map((event) => event.time)
  const waits = calls.slice(2, 6).map((time, i) => time - answers[i + 2]!)
  const results = events.filter((event) => event.type === 'tool/result').map((event) => event.time)
  const runs = results.slice(3, 6).map((time, i) => time - calls[i + 3]!)
  const spent = results.map((time, i) => time - answers[i]!)
  return {
    laterRun: median(runs),
    cpu,
    work: spent.reduce((a, b) => a + b, 0) / spent.length,
    firstWait: waits[0]!,
    laterWait: median(waits.slice(1)),
    mean: gaps.reduce((a, b) => a + b, 0) / gaps.length,
    firstBash: bashGaps[0]!,
    laterBash: median(bashGaps.slice(1)),
    end,
  }
}
try {
  const results = new Map<string, Figures[]>()
  for (let i = 0; i < RUNS; i++)
    for (const variant of i % 2 ? [...variants].reverse() : variants)
      for (const checkout of checkouts) {
        const key = `${checkout}\0${variant.label}`
        results.set(key, [...(results.get(key) ?? []), runOnce(variant, i, checkout)])
      }
  for (const checkout of checkouts) {
    if (checkout !== root) row(`${checkout}:`, '')
    report((variant, key) => median(results.get(`${checkout}\0${variant.label}`)!.map((figures) => figures[key])))
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}

function report(pick: (variant: Variant, key: keyof Figures) => number): void {
  const [auto, yolo, off, thinks, paced, pacedOff] = variants as [Variant, Variant, Variant, Variant, Variant, Variant]
  const base = pick(off, 'mean')
  row(`mean gap, ${off.label} (median of ${RUNS})`, ms(base))
  row(`mean gap, ${yolo.label}`, ms(pick(yolo, 'mean')), ratio(pick(yolo, 'mean'), base))
  row(`mean gap, ${auto.label}`, ms(pick(auto, 'mean')), `${ratio(pick(auto, 'mean'), base)} (target ≤ 1.5×)`)
  row(
    'sandboxed bash gap, first of the process',
    ms(pick(auto, 'firstBash')),
    `${ratio(pick(auto, 'firstBash'), pick(auto, 'laterBash'))} a later one (target ≤ 1.5×)`,
  )
  row(
    'sandboxed bash gap, first, after 0.3 s of reasoning',
    ms(pick(thinks, 'firstBash')),
    `${ratio(pick(thinks, 'firstBash'), pick(thinks, 'laterBash'))} a later one (target ≤ 1.5×)`,
  )
  row(
    'sandboxed bash gap, later',
    ms(pick(auto, 'laterBash')),
    `${ratio(pick(auto, 'laterBash'), pick(yolo, 'laterBash'))} unsandboxed (target ≤ 2×)`,
  )
  row('unsandboxed bash gap, later (yolo)', ms(pick(yolo, 'laterBash')))
  row(
    'sandboxed bash call → result, later, answers after 150 ms',
    ms(pick(paced, 'laterRun')),
    `${ratio(pick(paced, 'laterRun'), pick(pacedOff, 'laterRun'))} unsandboxed (${ms(pick(pacedOff, 'laterRun'))}; target ≤ 2×)`,
  )
  row(
    'CPU of the whole run (Keel and what it reaped), answers after 150 ms, auto',
    ms(pick(paced, 'cpu')),
    `${ratio(pick(paced, 'cpu'), pick(pacedOff, 'cpu'))} yolo with checkpoints off (${ms(pick(pacedOff, 'cpu'))})`,
  )
  row(
    "answer → the step's results, mean, answers after 150 ms, auto",
    ms(pick(paced, 'work')),
    `${ratio(pick(paced, 'work'), pick(pacedOff, 'work'))} yolo with checkpoints off (${ms(pick(pacedOff, 'work'))})`,
  )
  row(
    'answer → first bash call, auto / yolo / checkpoints off',
    `${ms(pick(auto, 'firstWait'))} / ${ms(pick(yolo, 'firstWait'))} / ${ms(pick(off, 'firstWait'))}`,
    `later: ${ms(pick(auto, 'laterWait'))} / ${ms(pick(yolo, 'laterWait'))} / ${ms(pick(off, 'laterWait'))}`,
  )
  row(
    'answer → turn end, checkpoints on (yolo)',
    ms(pick(yolo, 'end')),
    `${ratio(pick(yolo, 'end'), Math.max(pick(off, 'end'), 1))} checkpoints off (${ms(pick(off, 'end'))}; target ≤ 1.2×)`,
  )
}
