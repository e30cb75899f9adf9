// Checkpoints on a 20,000-file git repository, each figure against `git status` or checkpoints off, in one run.
// In the loop (a scripted `keel -p --mode yolo`, the model answering at once, so every wait is Keel's): how long the
// first writing tool of a process waits for its turn's snapshot, with the shadow warm (an earlier run made it) and
// cold (the first run in the repository); answer → `turn/end` after a `bash`, against checkpoints off; and the git
// processes a run starts (a logging `git` first on PATH), with and without four read-only steps in the middle.
// Then the Shadow alone: the first snapshot, a snapshot per turn, a rewind's preview and a restore.
// KEEL_BENCH_COMPARE=<another checkout> runs the loop figures of that checkout's `bin/keel.js` too, interleaved in the
// same run (a before/after: `git archive <commit>` into a folder whose node_modules links to this one's, @keel/* to
// its own packages).
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Shadow } from '../packages/checkpoint/src/shadow.ts'
import { median, ms, ratio, row } from './stats.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const compare = process.env.KEEL_BENCH_COMPARE
const RUNS = Number(process.env.KEEL_BENCH_RUNS ?? 3)
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-checkpoint-'))
const cwd = join(scratch, 'tree')
for (let d = 0; d < 200; d++) {
  mkdirSync(join(cwd, `dir${d}`), { recursive: true })
  for (let f = 0; f < 100; f++)
    writeFileSync(join(cwd, `dir${d}`, `file${f}.ts`), `export const v${d}_${f} = ${d * f}\n`.repeat(20))
}
writeFileSync(join(cwd, '.gitignore'), 'one.txt\n')
// Packed, as a clone is: a cold shadow's seed copies the blobs from the project's pack.
execFileSync(
  'bash',
  ['-c', 'git init -q && git add -A && git -c gc.auto=0 -c user.name=b -c user.email=b@b commit -qm init && git gc -q'],
  { cwd },
)

async function time(run: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}
const gitStatus = () => time(() => execFileSync('git', ['status', '--porcelain'], { cwd }))

// A `git` first on PATH that logs each call, then runs the real one.
const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
const bin = join(scratch, 'bin')
const gitLog = join(scratch, 'git-calls')
mkdirSync(bin)
writeFileSync(
  join(bin, 'git'),
  `#!/bin/sh\necho "$1 $2 $3 $4 $5 $6 $7 $8 $9" >> '${gitLog}'\nexec '${realGit}' "$@"\n`,
  {
    mode: 0o755,
  },
)

type Step = Record<string, unknown>
const bash = (command: string): Step => ({ toolCalls: [{ name: 'bash', arguments: { command } }] })
const read: Step = { toolCalls: [{ name: 'read', arguments: { path: 'dir0/file0.ts' } }] }
const todo: Step = {
  toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'look', status: 'in_progress' }] } }],
}
const answer: Step = { text: 'Done.' }
// The first call writes; the last `bash` writes nothing, so the answer's step re-checks an unchanged tree.
const plain = [bash('echo one > one.txt'), bash('echo hello'), answer]
const withReads = [bash('echo one > one.txt'), read, todo, read, todo, bash('echo hello'), answer]
const scripts = { plain, withReads }
for (const [name, steps] of Object.entries(scripts))
  writeFileSync(join(scratch, `${name}.json`), JSON.stringify({ steps }))

interface Run {
  firstToolWait: number
  /** Answer → the first call's result: the wait and the call's own work (its permission check, the command). */
  firstToolResult: number
  answerToEnd: number
  gits: number
}
function keel(home: string, script: keyof typeof scripts, checkpoints = true, checkout = root): Run {
  mkdirSync(home, { recursive: true })
  if (!checkpoints) writeFileSync(join(home, 'settings.json'), '{"checkpoint":{"enabled":false}}')
  writeFileSync(gitLog, '')
  const run = spawnSync(
    process.execPath,
    [
      join(checkout, 'bin/keel.js'),
      '-p',
      'go',
      '--model',
      `scripted/${join(scratch, `${script}.json`)}`,
      '--mode',
      'yolo',
    ],
    { cwd, env: { ...process.env, KEEL_HOME: home, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' },
  )
  if (run.status !== 0) throw new Error(`keel exited ${run.status}: ${run.stderr}`)
  const dir = join(home, 'sessions')
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.jsonl'))
  const file = files.sort().at(-1)!
  const events = readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; time: number })
  rmSync(join(dir, file))
  const answers = events.filter((event) => event.type === 'assistant/message')
  const call = events.find((event) => event.type === 'tool/call')!
  return {
    firstToolWait: call.time - answers[0]!.time,
    firstToolResult: events.find((event) => event.type === 'tool/result')!.time - answers[0]!.time,
    answerToEnd: events.find((event) => event.type === 'turn/end')!.time - answers.at(-1)!.time,
    gits: readFileSync(gitLog, 'utf8').split('\n').filter(Boolean).length,
  }
}

try {
  const warmHome = join(scratch, 'home-warm')
  const otherHome = join(scratch, 'home-other')
  keel(warmHome, 'plain') // makes the shadow: every later run in it is a new process with a warm shadow
  if (compare) keel(otherHome, 'plain', true, compare)
  const other = { warm: [] as Run[], reads: [] as Run[], cold: [] as Run[] }
  const status: number[] = []
  const warm: Run[] = []
  const reads: Run[] = []
  const off: Run[] = []
  const cold: Run[] = []
  for (let i = 0; i < RUNS; i++) {
    status.push(await gitStatus())
    warm.push(keel(warmHome, 'plain'))
    reads.push(keel(warmHome, 'withReads'))
    off.push(keel(join(scratch, `home-off-${i}`), 'plain', false))
    status.push(await gitStatus())
    if (i < Math.max(1, Math.ceil(RUNS / 2))) cold.push(keel(join(scratch, `home-cold-${i}`), 'plain'))
    if (compare) {
      other.warm.push(keel(otherHome, 'plain', true, compare))
      other.reads.push(keel(otherHome, 'withReads', true, compare))
      if (i < Math.max(1, Math.ceil(RUNS / 2)))
        other.cold.push(keel(join(scratch, `home-other-cold-${i}`), 'plain', true, compare))
    }
  }
  const pick = (runs: Run[], key: keyof Run) => median(runs.map((run) => run[key]))
  const base = median(status)
  row('git status on 20,000 files (baseline)', ms(base))
  row(
    'first writing tool waits, warm shadow (new process)',
    ms(pick(warm, 'firstToolWait')),
    `${ratio(pick(warm, 'firstToolWait'), base)} git status (target ≤ 2×)`,
  )
  row(
    'first writing tool waits, cold (first run here)',
    ms(pick(cold, 'firstToolWait')),
    `${ratio(pick(cold, 'firstToolWait'), base)} git status (${cold.length} runs; target ≤ 2×)`,
  )
  row('first writing tool waits, checkpoints off', ms(pick(off, 'firstToolWait')))
  // What precedes the call's start can move across it (a module the call needs, loaded before or after the call is
  // logged): the answer → result rows say whether the call as a whole moved.
  row(
    '  answer → its result, warm / cold / off',
    `${ms(pick(warm, 'firstToolResult'))} / ${ms(pick(cold, 'firstToolResult'))} / ${ms(pick(off, 'firstToolResult'))}`,
  )
  row(
    'answer → turn end after a bash, checkpoints on',
    ms(pick(warm, 'answerToEnd')),
    `${ratio(pick(warm, 'answerToEnd'), Math.max(pick(off, 'answerToEnd'), 1))} checkpoints off (${ms(pick(off, 'answerToEnd'))}; target ≤ 1.2×)`,
  )
  row(
    'git processes in a run, 2 bash + answer',
    String(pick(warm, 'gits')),
    `with 4 read-only steps more: ${pick(reads, 'gits')} (target: the same)`,
  )
  if (compare) {
    row(
      `${compare}: first writing tool, warm`,
      ms(pick(other.warm, 'firstToolWait')),
      ratio(pick(other.warm, 'firstToolWait'), base),
    )
    row(
      `${compare}: first writing tool, cold`,
      ms(pick(other.cold, 'firstToolWait')),
      ratio(pick(other.cold, 'firstToolWait'), base),
    )
    row(
      `${compare}:   answer → its result, warm / cold`,
      `${ms(pick(other.warm, 'firstToolResult'))} / ${ms(pick(other.cold, 'firstToolResult'))}`,
    )
    row(
      `${compare}: answer → turn end`,
      ms(pick(other.warm, 'answerToEnd')),
      `${ratio(pick(other.warm, 'answerToEnd'), Math.max(pick(off, 'answerToEnd'), 1))} checkpoints off`,
    )
    row(`${compare}: git processes`, String(pick(other.warm, 'gits')), `with the reads: ${pick(other.reads, 'gits')}`)
  }

  // The Shadow alone, against git status in the same loop.
  const shadow = new Shadow(cwd, join(scratch, 'home-shadow'))
  await shadow.init()
  const coldTree = await time(() => shadow.tree())
  const seededShadow = new Shadow(cwd, join(scratch, 'home-seeded'))
  await seededShadow.init()
  const seededTree = await time(async () => {
    await seededShadow.seed({ maxFiles: 50_000, maxBytes: 500_000_000 })
    await seededShadow.tree()
  })
  const unchanged: number[] = []
  const changed: number[] = []
  const shadowStatus: number[] = []
  for (let i = 0; i < RUNS * 2; i++) {
    shadowStatus.push(await gitStatus())
    unchanged.push(await time(() => shadow.tree()))
    for (let f = 0; f < 10; f++) writeFileSync(join(cwd, `dir${f}`, 'file0.ts'), `changed ${i}\n`)
    changed.push(await time(() => shadow.tree()))
  }
  const first = await shadow.tree()
  for (let f = 0; f < 10; f++) writeFileSync(join(cwd, `dir${f}`, 'file1.ts'), 'again\n')
  const now = await shadow.tree('index.bench')
  const preview: number[] = []
  for (let i = 0; i < RUNS; i++)
    preview.push(
      await time(async () => {
        const current = await shadow.tree()
        await shadow.diff(current, first)
        await shadow.diff(now, current)
      }),
    )
  const restore = await time(() => shadow.restore(now, first, 'index.bench'))
  const base2 = median(shadowStatus)
  row('Shadow: first snapshot (cold)', ms(coldTree), ratio(coldTree, base2), 'git status')
  row('Shadow: first snapshot, seeded from .git/index', ms(seededTree), ratio(seededTree, base2), 'git status')
  row('Shadow: snapshot, nothing changed', ms(median(unchanged)), ratio(median(unchanged), base2), 'git status')
  row('Shadow: snapshot, 10 files changed', ms(median(changed)), ratio(median(changed), base2), 'git status')
  row('rewind preview: files that change + conflicts', ms(median(preview)), ratio(median(preview), base2), 'git status')
  row('Shadow: restore 10 files', ms(restore), ratio(restore, base2), 'git status')
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
