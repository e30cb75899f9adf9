// A cold shadow seeded from the project's own .git/index: its first snapshot is the tree an unseeded shadow takes of
// the same files (converted blobs, ignored and .keel/ entries included in the project's index notwithstanding), it
// hashes only what the index does not vouch for, and it keeps every blob in objects of its own.
import { execFileSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
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

/**
 * `cwd`'s files made an hour old, as a checkout usually is (git's index then vouches for them by their stat data
 * alone: files written in the second of the `git add` are racily clean, and compared by content anyway), and
 * committed, `forced` added past .gitignore.
 */
function commitAnHourOld(cwd: string, forced: string[] = []): void {
  const old = Date.now() / 1000 - 3600
  for (const entry of readdirSync(cwd, { recursive: true, encoding: 'utf8' })) utimesSync(join(cwd, entry), old, old)
  git(cwd, ['init', '-q'])
  git(cwd, ['add', '-A'])
  if (forced.length) git(cwd, ['add', '-f', ...forced])
  git(cwd, ['commit', '-qm', 'init'])
}

/** A committed project of 300 files, one a CRLF file under `text=auto`, then one file changed and one added. */
function project(): string {
  root = mkdtempSync(join(tmpdir(), 'keel-seed-'))
  const cwd = join(root, 'project')
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(cwd, `dir${d}`), { recursive: true })
    for (let f = 0; f < 30; f++) writeFileSync(join(cwd, `dir${d}`, `f${f}.txt`), `file ${d}/${f}\n`)
  }
  writeFileSync(join(cwd, '.gitattributes'), '* text=auto\n')
  writeFileSync(join(cwd, 'crlf.txt'), 'one\r\ntwo\r\n')
  writeFileSync(join(cwd, '.gitignore'), '*.env\n')
  writeFileSync(join(cwd, 'secret.env'), 'TOKEN=1\n')
  mkdirSync(join(cwd, '.keel'))
  writeFileSync(join(cwd, '.keel', 'settings.json'), '{}\n')
  commitAnHourOld(cwd, ['secret.env'])
  writeFileSync(join(cwd, 'dir0', 'f0.txt'), 'changed since the commit\n')
  writeFileSync(join(cwd, 'new.txt'), 'not tracked yet\n')
  return cwd
}

const looseObjects = (gitDir: string) =>
  Number(
    /^count: (\d+)$/m.exec(execFileSync('git', ['--git-dir', gitDir, 'count-objects', '-v'], { encoding: 'utf8' }))![1],
  )

describe('a cold shadow seeded from the project index', () => {
  test('takes the tree an unseeded shadow takes, hashing only what changed, with objects of its own', async () => {
    const cwd = project()
    const seeded = new Shadow(cwd, join(root!, 'home-seeded'))
    await seeded.init()
    // Measured from the seeded index: 300 files, .gitattributes, .gitignore, crlf.txt and the new one.
    expect(await seeded.seed(limits)).toMatchObject({ files: 304 })
    const tree = await seeded.tree()
    // The same files without the project's .git: nothing to seed from.
    const copy = join(root!, 'copy')
    cpSync(cwd, copy, { recursive: true, filter: (src) => basename(src) !== '.git' })
    const plain = new Shadow(copy, join(root!, 'home-plain'))
    await plain.init()
    expect(await plain.seed(limits)).toBeUndefined()
    expect(tree).toBe(await plain.tree())
    // The CRLF file is snapshotted as its bytes, not as the project's LF blob; ignored and .keel/ entries are not in.
    const listed = execFileSync('git', ['--git-dir', seeded.gitDir, 'ls-tree', '-r', '--name-only', tree], {
      encoding: 'utf8',
    })
    expect(listed).not.toMatch(/secret\.env|\.keel/)
    const crlf = execFileSync('git', ['--git-dir', seeded.gitDir, 'cat-file', 'blob', `${tree}:crlf.txt`], {
      encoding: 'utf8',
    })
    expect(crlf).toBe('one\r\ntwo\r\n')
    // Seeded, the 300 committed blobs came as a pack: only the changed, new and converted files (and the trees)
    // were hashed into loose objects. Unseeded, every file was.
    expect(looseObjects(seeded.gitDir)).toBeLessThan(30)
    expect(looseObjects(plain.gitDir)).toBeGreaterThan(300)
    // Every blob is the shadow's own: with the project's .git gone, the tree still reads whole.
    renameSync(join(cwd, '.git'), join(root!, 'gone.git'))
    const objects = execFileSync('git', ['--git-dir', seeded.gitDir, 'ls-tree', '-r', tree], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(/\s/)[2])
      .join('\n')
    const check = execFileSync('git', ['--git-dir', seeded.gitDir, 'cat-file', '--batch-check'], {
      input: `${objects}\n`,
      encoding: 'utf8',
    })
    expect(check).not.toContain('missing')
    expect(check.split('\n').filter(Boolean)).toHaveLength(objects.split('\n').length)
  })

  test('an index with entries git would not look at seeds nothing; the shadow stays cold', async () => {
    const cwd = project()
    git(cwd, ['update-index', '--skip-worktree', 'dir1/f1.txt'])
    const shadow = new Shadow(cwd, join(root!, 'home'))
    await shadow.init()
    expect(await shadow.seed(limits)).toBeUndefined()
    expect(existsSync(join(shadow.gitDir, 'index'))).toBe(false)
    expect(shadow.warm()).toBe(false)
  })

  test('an index with an untracked cache and nothing ignored: seeded without it, measured, its attributes kept', async () => {
    root = mkdtempSync(join(tmpdir(), 'keel-seed-'))
    const cwd = join(root, 'project')
    mkdirSync(join(cwd, 'sub'), { recursive: true })
    for (let f = 0; f < 20; f++) writeFileSync(join(cwd, `f${f}.txt`), `file ${f}\n`)
    // Attributes in a folder below the top: the project converts, so its LF blob is not what the disk holds.
    writeFileSync(join(cwd, 'sub', '.gitattributes'), '*.txt text\n')
    writeFileSync(join(cwd, 'sub', 'crlf.txt'), 'one\r\ntwo\r\n')
    commitAnHourOld(cwd)
    git(cwd, ['update-index', '--untracked-cache'])
    git(cwd, ['-c', 'core.untrackedCache=true', 'status', '--porcelain'])
    expect(readFileSync(join(cwd, '.git', 'index'), 'latin1')).toContain('UNTR')
    writeFileSync(join(cwd, 'new.txt'), 'not tracked yet\n')

    const shadow = new Shadow(cwd, join(root, 'home'))
    await shadow.init()
    // 20 files, the attributes, the converted file and the new one: what the snapshot holds.
    expect(await shadow.seed(limits)).toMatchObject({ files: 23 })
    expect(readFileSync(join(shadow.gitDir, 'index'), 'latin1')).not.toContain('UNTR')
    const tree = await shadow.tree()
    const show = (path: string) =>
      execFileSync('git', ['--git-dir', shadow.gitDir, 'cat-file', 'blob', `${tree}:${path}`], { encoding: 'utf8' })
    expect(show('sub/crlf.txt')).toBe('one\r\ntwo\r\n')
    expect(show('new.txt')).toBe('not tracked yet\n')
  })
})
