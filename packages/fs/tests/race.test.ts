// A symlink swapped in between a tool's check and its open or write. Another process swaps `target` between a
// regular file and a link to a file outside, as fast as it can, while the tools work on `target` over and over;
// the outside file must never be read, changed or replaced.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fsKeel, type FsKeel } from './support.ts'

const SWAPPER = String.raw`
const { symlinkSync, renameSync, writeFileSync, existsSync } = require('node:fs')
const [dir, secret, stop, mode] = process.argv.slice(1)
const target = dir + '/target'
// Bounded: stops when told to, or after this many swaps whatever happens.
for (let i = 0; i < 2_000_000; i++) {
  if (i % 500 === 0 && existsSync(stop)) break
  try {
    if (mode === 'folder') {
      // 'box' is a link that flips, atomically, between a folder inside and the outside folder.
      symlinkSync('real-box', dir + '/box-in')
      renameSync(dir + '/box-in', dir + '/box')
      symlinkSync(require('node:path').dirname(secret), dir + '/box-out')
      renameSync(dir + '/box-out', dir + '/box')
    } else {
      symlinkSync(secret, dir + '/swap-link')
      renameSync(dir + '/swap-link', target)
      writeFileSync(dir + '/swap-file', 'AAA inside\n')
      renameSync(dir + '/swap-file', target)
    }
  } catch {}
}
`

let t: FsKeel
let outside: string
let secret: string
beforeAll(async () => {
  t = await fsKeel()
  outside = mkdtempSync(join(tmpdir(), 'keel-outside-'))
  secret = join(outside, 'secret.txt')
})
afterAll(async () => {
  await t.dispose()
  rmSync(outside, { recursive: true, force: true })
})

async function whileSwapping(work: () => Promise<void>, mode: 'file' | 'folder' = 'file'): Promise<void> {
  const stop = join(outside, `stop-${Date.now()}`)
  t.put('target', 'AAA inside\n')
  t.put('real-box/keep.txt', 'AAA inside\n')
  // In place before the swapper starts, or a write would create a real folder there and stop the flipping.
  if (!existsSync(join(t.cwd, 'box'))) symlinkSync('real-box', join(t.cwd, 'box'))
  const swapper = spawn(process.execPath, ['-e', SWAPPER, t.cwd, secret, stop, mode], { stdio: 'ignore' })
  const exited = new Promise((done) => swapper.on('exit', done))
  try {
    await work()
  } finally {
    writeFileSync(stop, '')
    await exited
  }
}

const TRIES = 300

describe('a symlink swapped in while a tool works never lets it out', () => {
  it('edit never changes the outside file', async () => {
    // Same text inside and out, so an edit that followed the link would match and write.
    writeFileSync(secret, 'AAA secret\n')
    await whileSwapping(async () => {
      for (let i = 0; i < TRIES; i++) await t.run('edit', { path: 'target', old_string: 'AAA', new_string: 'BBB' })
    })
    expect(readFileSync(secret, 'utf8')).toBe('AAA secret\n')
  }, 120_000)

  it('write never changes the outside file', async () => {
    writeFileSync(secret, 'AAA secret\n')
    await whileSwapping(async () => {
      for (let i = 0; i < TRIES; i++) await t.run('write', { path: 'target', content: 'pwned\n' })
    })
    expect(readFileSync(secret, 'utf8')).toBe('AAA secret\n')
  }, 120_000)

  it('write and edit through a folder link flipped to the outside never touch the outside', async () => {
    writeFileSync(join(outside, 'keep.txt'), 'AAA secret\n')
    await whileSwapping(async () => {
      for (let i = 0; i < TRIES; i++) {
        await t.run('write', { path: `box/new-${i}.txt`, content: 'pwned\n' })
        await t.run('edit', { path: 'box/keep.txt', old_string: 'AAA', new_string: `AAA${i}` })
      }
    }, 'folder')
    expect(readFileSync(join(outside, 'keep.txt'), 'utf8')).toBe('AAA secret\n')
    expect(readdirSync(outside).filter((name) => name.startsWith('new-') || name.includes('keel-tmp'))).toEqual([])
  }, 120_000)

  it('read and grep never show the outside file', async () => {
    writeFileSync(secret, 'AAA secret\n')
    const seen: string[] = []
    await whileSwapping(async () => {
      for (let i = 0; i < TRIES; i++) {
        seen.push((await t.run('read', { path: 'target' })).text)
        seen.push((await t.run('grep', { pattern: 'AAA', path: 'target' })).text)
      }
    })
    expect(seen.filter((text) => text.includes('secret') && !text.includes('outside the working directory'))).toEqual(
      [],
    )
    expect(existsSync(secret)).toBe(true)
  }, 120_000)
})
