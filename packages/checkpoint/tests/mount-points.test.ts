// A running sandbox keeps empty files on the host as mount points for missing protected paths (`.bashrc`,
// `.mcp.json`…); a snapshot taken meanwhile must not hold them, or a rewind would bring them back as files. Those
// made before the walk are left out of it; one a wrap made during it comes out of the index again afterwards.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, test } from 'vitest'
import { points } from '@keel/sandbox/mount-points'
import { Shadow } from '../src/shadow.ts'
import { withGitFirstOnPath } from './git-on-path.ts'

let root: string | undefined
afterEach(() => {
  points.clear()
  if (root) rmSync(root, { recursive: true, force: true })
  root = undefined
})

const held = (shadow: Shadow, tree: string) =>
  execFileSync('git', ['--git-dir', shadow.gitDir, 'ls-tree', '-r', '--name-only', tree], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)

function setUp() {
  root = mkdtempSync(join(tmpdir(), 'keel-mount-points-'))
  const cwd = join(root, 'cwd')
  mkdirSync(cwd)
  writeFileSync(join(cwd, 'mine.txt'), 'mine\n')
  return { cwd, shadow: new Shadow(cwd, join(root, 'home')) }
}

test('mount points there before the walk are left out of the snapshot; a real empty file is kept', async () => {
  const { cwd, shadow } = setUp()
  await shadow.init()
  for (const name of ['.bashrc', '.mcp.json']) {
    writeFileSync(join(cwd, name), '')
    points.add(join(cwd, name))
  }
  writeFileSync(join(cwd, 'empty.txt'), '')
  await shadow.add()
  expect(held(shadow, await shadow.writeTree())).toEqual(['empty.txt', 'mine.txt'])
})

test('a mount point made while git walks comes out of the index again', async () => {
  const { cwd, shadow } = setUp()
  await shadow.init()
  writeFileSync(join(cwd, '.profile'), '')
  // A git first on PATH whose `add` has read the tree (and taken the empty .profile) before a wrap makes the mount
  // point, and ends only after it: the walk and the wrap overlap for certain.
  await withGitFirstOnPath(
    (real) => `*" add "*)
  '${real}' "$@" || exit $?
  : > '${join(root!, 'walked')}'
  while [ ! -e '${join(root!, 'go')}' ]; do sleep 0.01; done
  exit 0;;`,
    async () => {
      const adding = shadow.add()
      while (!existsSync(join(root!, 'walked'))) await new Promise((done) => setTimeout(done, 5))
      points.add(join(cwd, '.profile'))
      writeFileSync(join(root!, 'go'), '')
      await adding
    },
  )
  expect(held(shadow, await shadow.writeTree())).toEqual(['mine.txt'])
})
