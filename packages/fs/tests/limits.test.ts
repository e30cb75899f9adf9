// Nothing a model asks of the file tools blocks the event loop or outlives its time limit: a catastrophic regex, a
// cancel in the middle of one, replace_all over a huge single line, a huge file, a walk over a big tree.
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, writeFileSync, ftruncateSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { unifiedDiff } from '@keel/fs'
import { applyUnifiedDiff } from './patch.ts'
import { textOfContent } from '../../../test-support/harness.ts'
import { fsKeel, type FsKeel } from './support.ts'

const CATASTROPHIC = '(a+)+$'
const LINE = `${'a'.repeat(60)}!`

/** Counts timer ticks while `work` runs: a blocked event loop would count none. */
async function ticksDuring<T>(work: Promise<T>): Promise<{ value: T; ticks: number }> {
  let ticks = 0
  const timer = setInterval(() => {
    ticks++
  }, 20)
  try {
    return { value: await work, ticks }
  } finally {
    clearInterval(timer)
  }
}

// Through ripgrep these lines are never candidates ((a+)+$ cannot match them), so the regex would not run at all:
// these tests pin the worker, in the walk that hands it whole files.
describe('grep runs its regex where it can be stopped', () => {
  let t: FsKeel
  beforeAll(async () => {
    // Half a second is past any harmless answer and costs the suite little: the worker burns a core until then.
    t = await fsKeel({ timeoutMs: 500, ripgrep: '' })
    t.put('bomb.txt', `${LINE}\n`)
    t.put('ok.txt', 'aaa\n')
  })
  afterAll(() => t.dispose())

  it('a catastrophic pattern ends at the time limit with an error saying so, and the loop keeps turning', async () => {
    const { value, ticks } = await ticksDuring(t.run('grep', { pattern: CATASTROPHIC }))
    expect(value.isError).toBe(true)
    expect(value.text).toBe(
      'Error: grep ran out of time: stopped after 500 ms (config timeoutMs); the pattern may backtrack catastrophically (nested quantifiers such as (a+)+), or the search is too wide; simplify the pattern or narrow path and glob',
    )
    expect(ticks).toBeGreaterThan(5)
  }, 30_000)

  it('through ripgrep the same search answers, at once, what the regex would', async () => {
    const fast = await fsKeel({ timeoutMs: 600_000 })
    try {
      fast.put('bomb.txt', `${LINE}\n`)
      fast.put('ok.txt', 'aaa\n')
      expect((await fast.run('grep', { pattern: CATASTROPHIC })).text).toBe('ok.txt:1: aaa')
    } finally {
      await fast.dispose()
    }
  })

  it('the same pattern on harmless input still answers', async () => {
    expect((await t.run('grep', { pattern: CATASTROPHIC, path: 'ok.txt' })).text).toBe('ok.txt:1: aaa')
  })

  it('a cancel stops a catastrophic search at once, long before its time limit', async () => {
    const slow = await fsKeel({ timeoutMs: 600_000, ripgrep: '' })
    try {
      slow.put('bomb.txt', `${LINE}\n`)
      const controller = new AbortController()
      let ticks = 0
      // Cancel from a timer: it can only fire while the grep runs if the loop is free.
      const timer = setInterval(() => {
        if (++ticks === 10) controller.abort()
      }, 20)
      const result = await slow.call('grep', { pattern: CATASTROPHIC }, controller.signal)
      clearInterval(timer)
      expect(ticks).toBeGreaterThanOrEqual(10)
      expect(result.isError).toBe(true)
      expect(textOfContent(result.content)).toBe('Error: tool call aborted')
    } finally {
      await slow.dispose()
    }
  }, 30_000)
})

describe('edit stays linear on huge lines', () => {
  let t: FsKeel
  beforeAll(async () => {
    t = await fsKeel()
  })
  afterAll(() => t.dispose())

  it('replace_all over one 3 MB line with 3 million matches', async () => {
    t.put('min.js', 'a'.repeat(3_000_000))
    const result = await t.run('edit', { path: 'min.js', old_string: 'a', new_string: 'b', replace_all: true })
    expect(result.isError).toBe(false)
    const [summary, ...diff] = result.text.split('\n')
    expect(summary).toBe('Edited min.js: 3000000 replacements at line 1 (+1 -1 lines).')
    // The diff shows the start of each changed line, not megabytes of it.
    expect(diff).toEqual([
      '--- min.js',
      '+++ min.js',
      '@@ -1,1 +1,1 @@',
      `-${'a'.repeat(2000)} … [line cut at 2000 characters; 3000000 in full]`,
      '\\ No newline at end of file',
      `+${'b'.repeat(2000)} … [line cut at 2000 characters; 3000000 in full]`,
      '\\ No newline at end of file',
    ])
    expect(readFileSync(join(t.cwd, 'min.js'), 'utf8')).toBe('b'.repeat(3_000_000))
  }, 60_000)

  it('many matches spread over a long line report their line once', async () => {
    t.put('two.txt', `x\n${'ab'.repeat(500_000)}\n`)
    const result = await t.run('edit', { path: 'two.txt', old_string: 'b', new_string: 'c', replace_all: true })
    expect(result.text.split('\n')[0]).toBe('Edited two.txt: 500000 replacements at line 2 (+1 -1 lines).')
  }, 60_000)
})

describe('the diff is bounded', () => {
  it('falls back to one block replacement when the inputs differ everywhere, and stays a correct diff', () => {
    const a = Array.from({ length: 40_000 }, (_, i) => `a${i}\n`).join('')
    const b = Array.from({ length: 40_000 }, (_, i) => (i % 2 ? `a${i}\n` : `b${i}\n`)).join('')
    const diff = unifiedDiff(a, b)
    expect(diff).toMatchObject({ added: 39_999, removed: 39_999 })
    expect(applyUnifiedDiff(a, diff.lines)).toBe(b)
  })

  it('compares long lines as ids: many megabyte lines that differ only at the end', () => {
    const long = 'x'.repeat(200_000)
    const a = Array.from({ length: 50 }, (_, i) => `${long}${i}\n`).join('')
    const b = Array.from({ length: 50 }, (_, i) => `${long}${i % 3 ? i : 'y'}\n`).join('')
    const diff = unifiedDiff(a, b)
    expect(diff.added).toBe(diff.removed)
    expect(diff.added).toBe(17)
  })
})

describe('read, glob and ls are bounded in time', () => {
  it('read answers for a huge file without counting all of it', async () => {
    // Reading the sparse file's zeros keeps a core busy for the whole limit (half of it counting, first).
    const t = await fsKeel({ timeoutMs: 600 })
    try {
      const path = t.put('huge.log', 'line\n'.repeat(2000))
      // Sparse: 200 GB on paper, nothing on disk; counting its lines would take minutes.
      const fd = openSync(path, 'r+')
      ftruncateSync(fd, 200 * 1024 ** 3)
      closeSync(fd)
      const result = await t.run('read', { path: 'huge.log', limit: 2 })
      expect(result).toEqual({
        isError: false,
        text: '     1\tline\n     2\tline\n… more lines follow (the file is too large to count them in time); use offset=3 to read on.',
      })
      const far = await t.run('read', { path: 'huge.log', offset: 10_000_000 })
      expect(far).toEqual({
        isError: true,
        text: 'Error: read ran out of time: stopped after 600 ms (config timeoutMs); read a smaller part of the file with offset and limit',
      })
    } finally {
      await t.dispose()
    }
  }, 60_000)

  it('glob, ls and grep stop a walk at the time limit', async () => {
    const t = await fsKeel({ timeoutMs: 1 })
    try {
      // One file written, the other 1,999 hard links to it: creating a file costs ten times what linking one does.
      for (let d = 0; d < 200; d++) {
        mkdirSync(join(t.cwd, `d${d}`))
        for (let f = 0; f < 10; f++) {
          const file = join(t.cwd, `d${d}`, `f${f}.txt`)
          if (d + f === 0) writeFileSync(file, 'x\n')
          else linkSync(join(t.cwd, 'd0', 'f0.txt'), file)
        }
      }
      expect(await t.run('glob', { pattern: '**/*.txt' })).toEqual({
        isError: true,
        text: 'Error: glob ran out of time: stopped after 1 ms (config timeoutMs); narrow the path or pattern',
      })
      expect((await t.run('grep', { pattern: 'x' })).text).toMatch(/^Error: grep ran out of time/)
    } finally {
      await t.dispose()
    }
  }, 60_000)
})
