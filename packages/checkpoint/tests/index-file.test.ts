// The measure reads a git index file itself (src/index-file.ts): held here to git's own `ls-files --debug` over the
// index versions and entry shapes git writes, and refused (undefined: the measure asks git) where it cannot read it.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { indexSizes } from '../src/index-file.ts'

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' })

/**
 * A repository of short and non-ASCII paths, one padded by a whole eight bytes, a folder two levels down, one file in
 * a folder left out later, and an entry whose path is longer than an entry's 12-bit length can say (4,095 bytes: no
 * file system here takes it, so it is an index entry alone).
 */
function repository(...init: string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'keel-index-'))
  roots.push(root)
  const cwd = join(root, 'repo')
  mkdirSync(join(cwd, 'deep', 'er'), { recursive: true })
  git(cwd, 'init', '-q', ...init)
  for (let i = 0; i < 30; i++) writeFileSync(join(cwd, `f${i}.txt`), 'x'.repeat(i * 7))
  writeFileSync(join(cwd, 'deep', 'er', 'file.txt'), 'deep\n')
  // 62 bytes before the path, 10 in it: a whole eight NULs of padding follow.
  writeFileSync(join(cwd, 'padded.txt'), 'eight\n')
  mkdirSync(join(cwd, 'ünï', 'own'), { recursive: true })
  writeFileSync(join(cwd, 'ünï', 'café.md'), 'accented\n')
  writeFileSync(join(cwd, 'ünï', 'own', 'kept-out.txt'), 'not counted\n')
  git(cwd, 'add', '-A')
  const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd, input: 'long\n', encoding: 'utf8' }).trim()
  const long = `${Array.from({ length: 17 }, (_, i) => `${i}`.padStart(250, 'l')).join('/')}/long.txt`
  git(cwd, 'update-index', '--add', '--cacheinfo', `100644,${blob},${long}`)
  git(cwd, 'commit', '-qm', 'init')
  return cwd
}

/** What git says the index holds: each path once, and the sum of the sizes it recorded. */
function gitFigures(cwd: string, without?: string): { files: number; bytes: number } {
  const listing = execFileSync('git', ['ls-files', '-z', '--debug', '--cached'], { cwd, encoding: 'utf8' })
  const paths = new Set<string>()
  let bytes = 0
  for (const part of listing.split('\0')) {
    const size = /\n {2}size: (\d+)\t/.exec(part)
    const path = part.replace(/^ {2}ctime:[\s\S]*?\n {2}size: [^\n]*\n/, '')
    if (size) bytes += Number(size[1])
    if (path && (!without || !path.startsWith(`${without}/`))) paths.add(path)
  }
  // Sizes were summed per entry: a path under `without` has its own size taken back.
  if (without) {
    const out = execFileSync('git', ['ls-files', '-z', '--debug', '--cached', '--', without], { cwd, encoding: 'utf8' })
    for (const size of out.matchAll(/\n {2}size: (\d+)\t/g)) bytes -= Number(size[1])
  }
  return { files: paths.size, bytes }
}

const indexOf = (cwd: string) => readFileSync(join(cwd, '.git', 'index'))

describe('a git index read directly', () => {
  test.each([2, 3, 4])('version %i: the paths and sizes git lists, a folder left out on request', (version) => {
    const cwd = repository()
    // An intent-to-add entry carries extended flags (version 3 and up).
    writeFileSync(join(cwd, 'intent.txt'), 'intended\n')
    git(cwd, 'add', '-N', 'intent.txt')
    git(cwd, 'update-index', '--index-version', String(version))
    expect(indexOf(cwd).readUInt32BE(4)).toBe(version === 2 ? 3 : version)
    if (version === 2) {
      // git keeps version 3 while an entry needs extended flags: without one it writes 2.
      git(cwd, 'rm', '-q', '--cached', 'intent.txt')
      git(cwd, 'update-index', '--index-version', '2')
      expect(indexOf(cwd).readUInt32BE(4)).toBe(2)
    }
    expect(indexSizes(indexOf(cwd))).toMatchObject(gitFigures(cwd))
    expect(indexSizes(indexOf(cwd), ['ünï/own'])).toMatchObject(gitFigures(cwd, 'ünï/own'))
    expect(gitFigures(cwd).files).toBe(version === 2 ? 35 : 36)
  })

  test('a path in conflict counts once, as git lists it', () => {
    const cwd = repository()
    git(cwd, 'checkout', '-qb', 'other')
    writeFileSync(join(cwd, 'f1.txt'), 'theirs\n')
    git(cwd, 'commit', '-qam', 'theirs')
    git(cwd, 'checkout', '-q', '-')
    writeFileSync(join(cwd, 'f1.txt'), 'ours, longer\n')
    git(cwd, 'commit', '-qam', 'ours')
    expect(() => git(cwd, 'merge', '-q', 'other')).toThrow()
    expect(git(cwd, 'ls-files', '-u')).toContain('f1.txt')
    expect(indexSizes(indexOf(cwd))).toMatchObject(gitFigures(cwd))
  })

  test('an index it cannot read whole is left to git', () => {
    const cwd = repository()
    const index = indexOf(cwd)
    // Torn: cut in the middle of the entries, or of the checksum.
    expect(indexSizes(index.subarray(0, 600))).toBeUndefined()
    expect(indexSizes(index.subarray(0, index.length - 5))).toBeUndefined()
    // Another version, and a file that is no index.
    const other = Buffer.from(index)
    other.writeUInt32BE(5, 4)
    expect(indexSizes(other)).toBeUndefined()
    expect(indexSizes(Buffer.from('not an index at all, long enough to be read'))).toBeUndefined()
    // SHA-256 object names: the entries do not end where this reading says.
    const sha256 = repository('--object-format=sha256')
    expect(indexSizes(indexOf(sha256))).toBeUndefined()
    // A sparse index holds folders as entries.
    const sparse = repository()
    git(sparse, 'sparse-checkout', 'init', '--cone', '--sparse-index')
    git(sparse, 'sparse-checkout', 'set', 'ünï')
    expect(git(sparse, 'ls-files', '--sparse')).toContain('deep/\n')
    expect(indexSizes(indexOf(sparse))).toBeUndefined()
  })

  test("a made-up index's long prefix-compressed paths cost a pass, not their rebuilding", () => {
    // Version 4: each entry keeps the whole previous path and adds a folder of 100 bytes, so the last is 5 MB long. Rebuilt per
    // entry to be held to a folder left out, that was 125 GB of copying: this would not return.
    const entries = 50_000
    const entry = Buffer.alloc(62 + 1 + 100 + 1)
    entry.writeUInt32BE(0o100644, 24)
    entry.writeUInt16BE(0xfff, 60)
    entry.fill('a', 63, 162)
    entry.write('/', 162, 'latin1')
    const header = Buffer.alloc(12)
    header.write('DIRC', 0, 'latin1')
    header.writeUInt32BE(4, 4)
    header.writeUInt32BE(entries, 8)
    const index = Buffer.concat([header, ...Array.from({ length: entries }, () => entry), Buffer.alloc(20)])
    const folder = 'a'.repeat(99)
    expect(indexSizes(index, ['kept/out'])).toMatchObject({ files: entries, bytes: 0 })
    // Every path but the first (`a…a/`) lies under the second folder down.
    expect(indexSizes(index, [`${folder}/${folder}`])).toMatchObject({ files: 1, bytes: 0 })
    expect(indexSizes(index, [folder])).toMatchObject({ files: 0, bytes: 0 })
  })

  test('what a seed reads of it: plain or not, attributes, extensions, and the objects git lists', () => {
    const cwd = repository()
    // A gitlink (a submodule's commit) names no blob; symlinks and files do.
    const commit = git(cwd, 'rev-parse', 'HEAD').trim()
    git(cwd, 'update-index', '--add', '--cacheinfo', `160000,${commit},vendored`)
    const read = () => indexSizes(indexOf(cwd))!
    const listed = git(cwd, 'ls-files', '-s')
      .split('\n')
      .filter((line) => line && !line.startsWith('160000'))
      .map((line) => line.split(' ')[1])
    expect(read().blobs().sort()).toEqual(listed.sort())
    expect(read()).toMatchObject({ plain: true, attributes: false })
    expect(read().extensions).toContain('TREE')
    // A `.gitattributes` below the top counts; a name that only ends like one does not.
    writeFileSync(join(cwd, 'x.gitattributes'), 'not one\n')
    git(cwd, 'add', 'x.gitattributes')
    expect(read().attributes).toBe(false)
    writeFileSync(join(cwd, 'deep', '.gitattributes'), '*.txt text\n')
    git(cwd, 'add', 'deep/.gitattributes')
    expect(read().attributes).toBe(true)
    // Version 4's paths are not rebuilt whole: whether it has attributes is left to git.
    git(cwd, 'update-index', '--index-version', '4')
    expect(read().attributes).toBeUndefined()
    git(cwd, 'update-index', '--index-version', '3')
    // Entries git would not look at in full.
    git(cwd, 'update-index', '--assume-unchanged', 'f1.txt')
    expect(read().plain).toBe(false)
    git(cwd, 'update-index', '--no-assume-unchanged', 'f1.txt')
    git(cwd, 'update-index', '--skip-worktree', 'f2.txt')
    expect(read().plain).toBe(false)
    git(cwd, 'update-index', '--no-skip-worktree', 'f2.txt')
    expect(read().plain).toBe(true)
    git(cwd, '-c', 'core.untrackedCache=true', 'status', '--porcelain')
    git(cwd, 'update-index', '--untracked-cache')
    git(cwd, '-c', 'core.untrackedCache=true', 'status', '--porcelain')
    expect(read().extensions).toContain('UNTR')
    // A split index holds its entries in another file.
    git(cwd, 'update-index', '--split-index')
    expect(indexSizes(indexOf(cwd))).toBeUndefined()
  })
})
