// The seeded path's edges: a file changed since the project's index is in the first snapshot; projects whose index
// cannot seed (none, empty, split, sparse) give the tree an unseeded shadow gives; a rewind to a seeded snapshot is
// exact after the project's `git gc --prune=now` took the objects its index named; a seeded index whose objects were
// never copied (a process killed in between) is dropped, and the next snapshot reads every file.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { Shadow } from '../src/shadow.ts'

let root: string | undefined
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true })
  root = undefined
})

const limits = { maxFiles: 50_000, maxBytes: 500_000_000 }
const git = (cwd: string, args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' })

/** A committed project of 40 files an hour old (so its index vouches for them by stat data). */
function project(): string {
  root = mkdtempSync(join(tmpdir(), 'keel-seed-edges-'))
  const cwd = join(root, 'project')
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(cwd, `dir${d}`), { recursive: true })
    for (let f = 0; f < 10; f++) writeFileSync(join(cwd, `dir${d}`, `f${f}.txt`), `file ${d}/${f}\n`)
  }
  const old = Date.now() / 1000 - 3600
  for (let d = 0; d < 4; d++) for (let f = 0; f < 10; f++) utimesSync(join(cwd, `dir${d}`, `f${f}.txt`), old, old)
  git(cwd, ['init', '-q'])
  git(cwd, ['add', '-A'])
  git(cwd, ['commit', '-qm', 'init'])
  return cwd
}

/** The tree a shadow of the same files without a `.git` takes: nothing seeds it. */
async function unseededTree(cwd: string): Promise<string> {
  const copy = join(root!, 'copy')
  rmSync(copy, { recursive: true, force: true })
  cpSync(cwd, copy, { recursive: true, filter: (src) => basename(src) !== '.git' })
  const plain = new Shadow(copy, join(root!, 'home-plain'))
  await plain.init()
  expect(await plain.seed(limits)).toBeUndefined()
  return plain.tree()
}

const blob = (shadow: Shadow, spec: string) =>
  execFileSync('git', ['--git-dir', shadow.gitDir, 'cat-file', 'blob', spec], { encoding: 'utf8' })

describe('the seeded first snapshot', () => {
  test('holds a file changed since the project index, at the same size', async () => {
    const cwd = project()
    writeFileSync(join(cwd, 'dir1', 'f1.txt'), 'FILE 1/1\n')
    const shadow = new Shadow(cwd, join(root!, 'home'))
    await shadow.init()
    expect(await shadow.seed(limits)).toMatchObject({ files: 40 })
    const tree = await shadow.tree()
    expect(blob(shadow, `${tree}:dir1/f1.txt`)).toBe('FILE 1/1\n')
    expect(tree).toBe(await unseededTree(cwd))
  })

  test.each([
    ['an empty index', (cwd: string) => git(cwd, ['rm', '-q', '-r', '--cached', '.'])],
    ['a split index', (cwd: string) => git(cwd, ['update-index', '--split-index'])],
    ['a sparse index', (cwd: string) => git(cwd, ['sparse-checkout', 'set', '--cone', '--sparse-index', 'dir0'])],
  ])('with %s, gives the tree an unseeded shadow gives', async (_name, setUp) => {
    const cwd = project()
    setUp(cwd)
    writeFileSync(join(cwd, 'dir0', 'f0.txt'), 'changed\n')
    const shadow = new Shadow(cwd, join(root!, 'home'))
    await shadow.init()
    await shadow.seed(limits)
    expect(await shadow.tree()).toBe(await unseededTree(cwd))
  })

  test('a FIFO, a device or a folder where the project index belongs seeds nothing, and blocks nothing', async () => {
    for (const make of [
      (index: string) => execFileSync('mkfifo', [index]),
      (index: string) => symlinkSync('/dev/zero', index),
      (index: string) => mkdirSync(index),
    ]) {
      const cwd = project()
      const index = join(cwd, '.git', 'index')
      rmSync(index)
      make(index)
      const shadow = new Shadow(cwd, join(root!, 'home'))
      await shadow.init()
      expect(shadow.projectEntries()).toBe(0)
      expect(await shadow.seed(limits)).toBeUndefined()
      expect(shadow.warm()).toBe(false)
      rmSync(root!, { recursive: true, force: true })
    }
  })

  test('rewinds exactly after the project gc pruned the objects its index named', async () => {
    const cwd = project()
    const shadow = new Shadow(cwd, join(root!, 'home'))
    await shadow.init()
    expect(await shadow.seed(limits)).toBeDefined()
    const target = await shadow.tree()
    // The person rewrites the history and prunes: no object the seed came from is left in the project.
    for (let d = 0; d < 4; d++) writeFileSync(join(cwd, `dir${d}`, 'f0.txt'), `rewritten ${d}\n`)
    rmSync(join(cwd, 'dir3'), { recursive: true })
    git(cwd, ['checkout', '-q', '--orphan', 'other'])
    git(cwd, ['add', '-A'])
    git(cwd, ['commit', '-qm', 'other'])
    git(cwd, ['branch', '-D', '-q', 'master'])
    git(cwd, ['reflog', 'expire', '--expire=now', '--all'])
    git(cwd, ['gc', '-q', '--prune=now'])
    expect(() => git(cwd, ['cat-file', '-e', `${target}:dir0/f1.txt`])).toThrow()
    const current = await shadow.tree('index.rewind')
    await shadow.restore(current, target, 'index.rewind')
    for (let d = 0; d < 4; d++)
      for (let f = 0; f < 10; f++)
        expect(readFileSync(join(cwd, `dir${d}`, `f${f}.txt`), 'utf8')).toBe(`file ${d}/${f}\n`)
  })

  test('a failed copy drops the seeded index; the next snapshot reads every file', async () => {
    const cwd = project()
    const shadow = new Shadow(cwd, join(root!, 'home'))
    await shadow.init()
    expect(await shadow.seed(limits)).toBeDefined()
    await shadow.add()
    // The project's objects are gone before the copy ran.
    rmSync(join(cwd, '.git', 'objects'), { recursive: true })
    await expect(shadow.tree()).rejects.toThrow(/pack-objects/)
    expect(shadow.warm()).toBe(false)
    expect(await shadow.tree()).toBe(await unseededTree(cwd))
  })

  test('a seeded index whose objects were never copied is dropped; the next snapshot reads every file', async () => {
    const cwd = project()
    const killed = new Shadow(cwd, join(root!, 'home-killed'))
    await killed.init()
    expect(await killed.seed(limits)).toBeDefined()
    await killed.add()
    // Another process finds the index, but not the objects the killed one was to copy (its shadow copied aside, as
    // the process that seeded it left it).
    cpSync(join(root!, 'home-killed'), join(root!, 'home'), { recursive: true })
    const next = new Shadow(cwd, join(root!, 'home'))
    await next.init()
    await expect(next.tree()).rejects.toThrow(/invalid object/)
    expect(next.warm()).toBe(false)
    expect(await next.tree()).toBe(await unseededTree(cwd))
  })
})
