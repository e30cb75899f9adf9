// Its own file, so its process holds nothing else while the memory is watched.
import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fsKeel, type FsKeel } from './support.ts'

const LINES = 500_000
const line = (n: number) => `line ${String(n).padStart(7, '0')} ${'x'.repeat(88)}\n` // 102 bytes
let t: FsKeel

beforeAll(async () => {
  t = await fsKeel()
  // Written in 1 MB pieces so that making the file does not itself raise the process's peak memory.
  const fd = openSync(join(t.cwd, 'big.log'), 'w')
  let piece = ''
  for (let n = 1; n <= LINES; n++) {
    piece += line(n)
    if (piece.length >= 1 << 20) {
      writeSync(fd, piece)
      piece = ''
    }
  }
  writeSync(fd, piece)
  closeSync(fd)
})
afterAll(() => t.dispose())

/** Peak of JS heap plus Buffer memory while `work` runs, above where it started, sampled on every turn of the loop. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; heap: number; rss: number }> {
  globalThis.gc?.()
  const used = () => {
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const start = used()
  const rssBefore = process.resourceUsage().maxRSS
  let peak = start
  let running = true
  const sample = () => {
    peak = Math.max(peak, used())
    if (running) setImmediate(sample)
  }
  sample()
  const result = await work()
  running = false
  peak = Math.max(peak, used())
  return { result, heap: peak - start, rss: (process.resourceUsage().maxRSS - rssBefore) * 1024 }
}

it('reads a window of a 50 MB file without loading it whole', async () => {
  const { result, heap, rss } = await peakGrowth(() => t.run('read', { path: 'big.log', offset: 250_000, limit: 3 }))
  expect(result.isError).toBe(false)
  expect(result.text).toBe(
    [
      `250000\t${line(250_000).trimEnd()}`,
      `250001\t${line(250_001).trimEnd()}`,
      `250002\t${line(250_002).trimEnd()}`,
      `… ${(LINES - 250_002).toLocaleString('en-US')} more lines; use offset=250003 to read on.`,
    ].join('\n'),
  )
  // The file is 51 MB; loading it (as a Buffer or a string) would show up in full in either figure. The heap bound
  // leaves room for garbage the collector has not reached yet on a loaded machine (12.3 MB was seen under the gate).
  expect(heap).toBeLessThan(16 * 1024 * 1024)
  expect(rss).toBeLessThan(25 * 1024 * 1024)
})
