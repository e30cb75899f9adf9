// The `edit`/`write` diff (packages/fs, on the `diff` package): time per diff for the shapes the tools meet: a small
// edit in a large file, a rewrite of a medium file, many long lines, and inputs that differ everywhere (the
// block-replacement fallback). Nothing is asserted.
import { unifiedDiff } from '@keel/fs'
import { median, ms, row } from './stats.ts'

function lines(count: number, make: (i: number) => string): string {
  return Array.from({ length: count }, (_, i) => `${make(i)}\n`).join('')
}

const big = lines(20_000, (i) => `  const value${i} = compute(${i}) // some ordinary source text`)
const cases: { label: string; a: string; b: string }[] = [
  { label: 'one-line edit in a 20k-line file', a: big, b: big.replace('value10000 ', 'renamed10000 ') },
  {
    label: '5% of a 2k-line file rewritten',
    a: lines(2000, (i) => `line ${i}`),
    b: lines(2000, (i) => (i % 20 ? `line ${i}` : `changed ${i}`)),
  },
  {
    label: '50 lines of 200 KB, 17 changed',
    a: lines(50, (i) => `${'x'.repeat(200_000)}${i}`),
    b: lines(50, (i) => `${'x'.repeat(200_000)}${i % 3 ? i : 'y'}`),
  },
  {
    label: '40k lines, every other one changed (fallback)',
    a: lines(40_000, (i) => `a${i}`),
    b: lines(40_000, (i) => (i % 2 ? `a${i}` : `b${i}`)),
  },
]

for (const { label, a, b } of cases) {
  const samples: number[] = []
  for (let i = 0; i < 5; i++) {
    const started = performance.now()
    unifiedDiff(a, b)
    samples.push(performance.now() - started)
  }
  row(label, `median ${ms(median(samples))}`)
}
