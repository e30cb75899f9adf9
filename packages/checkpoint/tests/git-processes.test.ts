// The git processes a snapshot costs: a shadow is made without `git init` (git finds it whole), a re-check of an unchanged tree is one
// `add` (the index's checksum says its tree is the one already written), and a commit reads its parent from the
// ref's file. Counted through a logging `git` first on PATH; each result checked against git itself.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { Shadow } from '../src/shadow.ts'

let root: string
let log: string
let path: string | undefined
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'keel-git-processes-'))
  const bin = join(root, 'bin')
  mkdirSync(bin)
  log = join(bin, 'calls')
  writeFileSync(log, '')
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${real}' "$@"\n`, { mode: 0o755 })
  path = process.env.PATH
  process.env.PATH = `${bin}:${path}`
})
afterEach(() => {
  process.env.PATH = path
  rmSync(root, { recursive: true, force: true })
})

/** The commands git was asked to run since the last call. */
function ran(): string[] {
  const calls = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace(/-c \S+ /g, '').split(' ')[0]!)
  writeFileSync(log, '')
  return calls
}

/** A folder of files an hour old: git's stat cache vouches for them (a file of this second is read again). */
function project(): string {
  const cwd = join(root, 'project')
  mkdirSync(join(cwd, 'src'), { recursive: true })
  for (let i = 0; i < 5; i++) writeFileSync(join(cwd, 'src', `f${i}.ts`), `export const x${i} = ${i}\n`)
  const old = Date.now() / 1000 - 3600
  for (let i = 0; i < 5; i++) utimesSync(join(cwd, 'src', `f${i}.ts`), old, old)
  return cwd
}

test('a re-check of an unchanged tree runs `add` alone; a changed one writes its tree', async () => {
  const cwd = project()
  const shadow = new Shadow(cwd, join(root, 'home'))
  await shadow.init()
  expect(ran()).toEqual([])
  const first = await shadow.tree()
  expect(ran()).toEqual(['add', 'write-tree'])
  // write-tree may store its cache in the index: the next look confirms the index is the one it wrote.
  expect(await shadow.tree()).toBe(first)
  ran()
  expect(await shadow.tree()).toBe(first)
  expect(ran()).toEqual(['add'])

  writeFileSync(join(cwd, 'src', 'f0.ts'), 'export const x0 = "changed"\n')
  const changed = await shadow.tree()
  expect(ran()).toEqual(['add', 'write-tree'])
  expect(changed).not.toBe(first)
  const listed = execFileSync('git', ['--git-dir', shadow.gitDir, 'show', `${changed}:src/f0.ts`], {
    encoding: 'utf8',
  })
  expect(listed).toBe('export const x0 = "changed"\n')
  // Another shadow object on the same repository (another process) changes the index: this one's memory of it is
  // no longer trusted.
  writeFileSync(join(cwd, 'src', 'f1.ts'), 'export const x1 = "by the other"\n')
  const other = await new Shadow(cwd, join(root, 'home')).tree()
  expect(await shadow.tree()).toBe(other)
  expect(other).not.toBe(changed)
})

test('commits chain on the session ref without asking git for its head', async () => {
  const cwd = project()
  const shadow = new Shadow(cwd, join(root, 'home'))
  await shadow.init()
  const tree = await shadow.tree()
  ran()
  const one = await shadow.keep(tree, 's1', 'turn 1 turn-start')
  const two = await shadow.keep(tree, 's1', 'turn 2 turn-start')
  expect(ran()).toEqual(['commit-tree', 'update-ref', 'commit-tree', 'update-ref'])
  const parents = execFileSync('git', ['--git-dir', shadow.gitDir, 'rev-list', '--parents', 'refs/keel/s1'], {
    encoding: 'utf8',
  })
  expect(parents.trim().split('\n')).toEqual([`${two} ${one}`, one])
  // Packed (a `git pack-refs` in the shadow): the head is still found.
  execFileSync('git', ['--git-dir', shadow.gitDir, 'pack-refs', '--all'])
  const three = await new Shadow(cwd, join(root, 'home')).keep(tree, 's1', 'turn 3 turn-start')
  const head = execFileSync('git', ['--git-dir', shadow.gitDir, 'rev-parse', `${three}^`], { encoding: 'utf8' })
  expect(head.trim()).toBe(two)
})

test('the shadow is made without git, private, and git finds it whole; a folder in the way is made one by git', async () => {
  const cwd = project()
  const home = join(root, 'home')
  const shadow = new Shadow(cwd, home)
  await shadow.init()
  expect(ran()).toEqual([])
  expect(statSync(shadow.gitDir).mode & 0o777).toBe(0o700)
  const tree = await shadow.tree()
  await shadow.keep(tree, 's1', 'turn 1 turn-start')
  expect(execFileSync('git', ['--git-dir', shadow.gitDir, 'config', 'core.bare'], { encoding: 'utf8' }).trim()).toBe(
    'true',
  )
  execFileSync('git', ['--git-dir', shadow.gitDir, 'fsck', '--strict', '--no-progress'], { stdio: 'pipe' })
  // Nothing of the making is left beside it.
  expect(readdirSync(join(home, 'checkpoints'))).toEqual([basename(shadow.gitDir)])

  // What an init cut short leaves: a folder that is no repository yet.
  const other = join(root, 'other')
  mkdirSync(other)
  const inTheWay = new Shadow(other, home)
  mkdirSync(join(inTheWay.gitDir, 'objects'), { recursive: true })
  ran()
  await inTheWay.init()
  expect(ran()).toEqual(['init'])
  expect(await inTheWay.tree()).toMatch(/^[0-9a-f]{40}$/)
})
