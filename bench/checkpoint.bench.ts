// The cost of a checkpoint on a 10,000-file working directory: the first snapshot (cold shadow index), a snapshot
// per turn when nothing or a few files changed, the preview a rewind picker shows (the tree now, the files that
// change, the person's conflicts: one snapshot and two tree diffs), and a restore, each against `git status`.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Shadow } from '../packages/checkpoint/src/shadow.ts'
import { median, ms, ratio, row } from './stats.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-checkpoint-'))
const cwd = join(scratch, 'tree')
for (let d = 0; d < 100; d++) {
  mkdirSync(join(cwd, `dir${d}`), { recursive: true })
  for (let f = 0; f < 100; f++)
    writeFileSync(join(cwd, `dir${d}`, `file${f}.ts`), `export const v${d}_${f} = ${d * f}\n`.repeat(20))
}
execFileSync('bash', ['-c', 'git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm init'], {
  cwd,
})

async function time(run: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

const RUNS = 7
const status: number[] = []
for (let i = 0; i < RUNS; i++) status.push(await time(() => execFileSync('git', ['status', '--porcelain'], { cwd })))
const shadow = new Shadow(cwd, join(scratch, 'home'))
await shadow.init()
const cold = await time(() => shadow.tree())
const unchanged: number[] = []
for (let i = 0; i < RUNS; i++) unchanged.push(await time(() => shadow.tree()))
const changed: number[] = []
for (let i = 0; i < RUNS; i++) {
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

const base = median(status)
row('git status on 10,000 files (baseline)', ms(base))
row('checkpoint: first snapshot (cold)', ms(cold), ratio(cold, base), 'vs git status')
row(
  'checkpoint: per turn, nothing changed (median)',
  ms(median(unchanged)),
  ratio(median(unchanged), base),
  'vs git status',
)
row(
  'checkpoint: per turn, 10 files changed (median)',
  ms(median(changed)),
  ratio(median(changed), base),
  'vs git status',
)
row('rewind preview: files that change + conflicts', ms(median(preview)), ratio(median(preview), base), 'vs git status')
row('checkpoint: restore 10 files', ms(restore), ratio(restore, base), 'vs git status')
rmSync(scratch, { recursive: true, force: true })
