// What .gitignore hides, held against git itself: every tree here is a repository, and what `glob`, `grep` (through
// ripgrep and through Keel's own walk) and `ls` list must be what `git ls-files --others` lists, from the top and
// from a directory inside. Named cases first (the classes that went wrong: a deeper .gitignore re-including a
// directory, git's pattern syntax), then trees and .gitignore files drawn from a seeded generator.
import { execFileSync } from 'node:child_process'
import { linkSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseGitignore } from '../src/wildmatch.ts'
import { fsKeel, SEARCH_WAYS, type FsKeel } from './support.ts'

/** git with no global or system config: no core.excludesFile, nothing but the .gitignore files. */
const gitEnv = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' }

type Tree = Record<string, string>

/**
 * Every tree is planted (and listed by git) once, in a folder of its own, for both ways: each `agree` moves it into
 * the keel's cwd and back, two renames instead of a `git init`, a file creation per path and a `git ls-files`.
 */
const trees = mkdtempSync(join(tmpdir(), 'keel-gitignore-trees-'))
const planted = new Map<string, { name: string; files: string[] }>()
const needleFile = join(trees, 'needle')
writeFileSync(needleFile, 'needle\n')
afterAll(() => rmSync(trees, { recursive: true, force: true }))

/** Writes `tree` (a path ending in `/` is an empty directory) as a fresh repository; its name and git's listing. */
function plant(tree: Tree): { name: string; files: string[] } {
  const key = JSON.stringify(tree)
  const known = planted.get(key)
  if (known) return known
  const name = `t${planted.size + 1}`
  const top = join(trees, name)
  mkdirSync(top)
  // No template: hooks and the sample exclude file would be dozens of files to create, and none bears on ignoring.
  execFileSync('git', ['init', '-q', '--template='], { cwd: top, env: gitEnv })
  for (const [path, content] of Object.entries(tree)) {
    const full = join(top, path)
    if (path.endsWith('/')) mkdirSync(full, { recursive: true })
    else {
      mkdirSync(dirname(full), { recursive: true })
      // Most files hold the needle: hard links to one, as linking costs a tenth of creating a file on some disks.
      if (content === needle) linkSync(needleFile, full)
      else writeFileSync(full, content)
    }
  }
  const made = { name, files: gitFiles(top) }
  planted.set(key, made)
  return made
}

/** git's own listing of the untracked files its .gitignore files let through, sorted as Keel sorts. */
function gitFiles(top: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--others', '--exclude-per-directory=.gitignore'], {
    cwd: top,
    env: gitEnv,
    encoding: 'utf8',
  })
  return out
    .split('\0')
    .filter(Boolean)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

const under = (files: string[], dir: string) =>
  dir ? files.filter((file) => file.startsWith(`${dir}/`)).map((file) => file.slice(dir.length + 1)) : files

/** What the tools list in `dir` of tree `name`, each relative to `dir`. */
async function keelFiles(t: FsKeel, name: string, dir: string) {
  const path = dir ? `${name}/${dir}` : name
  const strip = (line: string) => line.slice(path.length + 1)
  const glob = await t.run('glob', { pattern: '**', path })
  expect(glob.isError).toBe(false)
  const listed = glob.text.startsWith('No files match') ? [] : glob.text.split('\n').map(strip)
  // Every file holds one line "needle" (and .gitignore files hold none): grep finds each file it searches.
  const grep = await t.run('grep', { pattern: 'needle', path })
  expect(grep.isError).toBe(false)
  const searched = grep.text.startsWith('No matches')
    ? []
    : grep.text.split('\n').map((line) => strip(line.slice(0, line.lastIndexOf(':1: needle'))))
  return { glob: listed.filter((file) => !file.endsWith('.gitignore')), grep: searched }
}

/** The name `agree` last gave its tree inside the cwd. */
let current = ''

/**
 * The tools agree with git on tree `tree`, from the top and from each directory git lists a file in. The tree stays
 * in the cwd until the next `agree` (an `ls` may look at it).
 */
async function agree(t: FsKeel, tree: Tree) {
  if (current) renameSync(join(t.cwd, current), join(trees, current))
  const { name, files } = plant(tree)
  renameSync(join(trees, name), join(t.cwd, name))
  current = name
  const all = files.filter((file) => !file.endsWith('.gitignore'))
  const dirs = new Set([''])
  for (const file of all)
    for (let at = file.indexOf('/'); at > 0; at = file.indexOf('/', at + 1)) dirs.add(file.slice(0, at))
  for (const dir of dirs) {
    const expected = under(all, dir)
    const got = await keelFiles(t, name, dir)
    expect({ dir, ...got }).toEqual({ dir, glob: expected, grep: expected })
  }
  return all
}

const needle = 'needle\n'

describe.each(SEARCH_WAYS)('.gitignore as git decides it, %s', (_, way) => {
  let t: FsKeel
  beforeAll(async () => {
    t = await fsKeel({ ...way, maxEntries: 1000, maxGrepMatches: 1000 })
  })
  afterAll(async () => {
    // The last tree goes back where the next way takes it from.
    if (current) renameSync(join(t.cwd, current), join(trees, current))
    current = ''
    await t.dispose()
  })

  it('lets a deeper .gitignore re-include a directory a shallower one ignores, and the shallower rules still apply in it', async () => {
    const listed = await agree(t, {
      '.gitignore': 'gen/\n*.tmp\n',
      'gen/a.txt': needle,
      'lib/.gitignore': '!gen/\n',
      'lib/gen/a.txt': needle,
      'lib/gen/b.tmp': needle,
      'lib/gen/deep/c.txt': needle,
      'other/gen/d.txt': needle,
    })
    expect(listed).toEqual(['lib/gen/a.txt', 'lib/gen/deep/c.txt'])
    // ls shows the re-included directory and its files.
    expect((await t.run('ls', { path: `${current}/lib` })).text).toBe('gen/\n.gitignore')
    expect((await t.run('ls', { path: `${current}/lib/gen` })).text).toBe(
      'deep/\na.txt\n(1 entry hidden: gitignored, node_modules or .git)',
    )
  })

  it('re-includes within one file, and never below an ignored directory', async () => {
    await agree(t, {
      '.gitignore': 'build/\n!build/\nout/\nlog*\n!log.keep\n',
      'build/a.txt': needle,
      'out/.gitignore': '!*\n',
      'out/b.txt': needle,
      'log.txt': needle,
      'log.keep': needle,
      'x/.gitignore': 'out\n!out/c.txt\n',
      'x/out/c.txt': needle,
    })
  })

  it("reads git's pattern syntax: anchors, **, classes, escapes, trailing spaces, CRLF, comments", async () => {
    await agree(t, {
      '.gitignore': [
        '\uFEFF# a comment',
        '/top.txt',
        'a/**/z.txt',
        '**/deep',
        'docs/**',
        '!docs/keep/',
        '*.[oa]',
        '[!x]?.md',
        '[[:digit:]]*.txt',
        '\\#hash',
        '\\!bang',
        'space\\ ',
        'trail   ',
        'crlf\r',
        'q?x',
        '[a-c-e].d',
        'unclosed[',
        'back\\',
        // git matches bytes: `?` is one byte of a UTF-8 name.
        'caf?',
        'n??o',
        '[é]x',
        // Lines ripgrep reads differently: through it, grep must walk as Keel does.
        '{m,n}.b',
        'tab\t',
        'esc\\  ',
        '[\\]]z',
        '',
      ].join('\n'),
      'top.txt': needle,
      'sub/top.txt': needle,
      'a/z.txt': needle,
      'a/b/c/z.txt': needle,
      'b/a/z.txt': needle,
      'x/deep/y.txt': needle,
      deep: needle,
      'docs/a.txt': needle,
      'docs/keep/b.txt': needle,
      'm.o': needle,
      'm.a': needle,
      'm.c': needle,
      'ab.md': needle,
      'xb.md': needle,
      'abc.md': needle,
      '1st.txt': needle,
      'first.txt': needle,
      '#hash': needle,
      '!bang': needle,
      'space ': needle,
      trail: needle,
      crlf: needle,
      qyx: needle,
      'q/x': needle,
      'b.d': needle,
      '-.d': needle,
      'd.d': needle,
      'e.d': needle,
      'unclosed[': needle,
      'back\\': needle,
      '.hidden/h.txt': needle,
      café: needle,
      cafe: needle,
      nõo: needle,
      éx: needle,
      'm.b': needle,
      '{m,n}.b': needle,
      tab: needle,
      'tab\t': needle,
      'esc ': needle,
      'esc  ': needle,
      ']z': needle,
    })
  })

  it('reads a long .gitignore of plain names and *.ext with negations among them, as git does', async () => {
    const names = ['logs', 'pids', 'coverage', '.env', 'out', 'tmp', 'cache', 'lib', '*.log', '*.pid.lock', '*~']
    const files = ['keep', 'more', 'still', 'other', 'a.log', '.log', 'a.pid.lock', 'a.lock', 'b~', 'c.tmp', 'd.gz']
    const listed = await agree(t, {
      '.gitignore': `${names.join('\n')}\n!tmp\n!cache\n!*.tmp\nkeep\nmore\nstill\n*.gz\n!lib/\n`,
      'sub/.gitignore': 'x\ny\nz\n!logs\n!out/\n!*.log\n!*~\nw\n',
      ...Object.fromEntries([...names.filter((name) => !name.startsWith('*')), ...files].map((name) => [name, needle])),
      ...Object.fromEntries(
        ['logs', 'out/a', 'x', 'y', 'w', 'v', 'lib/a', 'tmp', 'e.log', 'f~', 'g.pid.lock'].map((name) => [
          `sub/${name}`,
          needle,
        ]),
      ),
    })
    expect(listed).toEqual([
      'a.lock',
      'c.tmp',
      'cache',
      'other',
      'sub/e.log',
      'sub/f~',
      'sub/lib/a',
      'sub/logs',
      'sub/out/a',
      'sub/tmp',
      'sub/v',
      'tmp',
    ])
  })

  it('agrees with git on generated trees and .gitignore files', async () => {
    const random = mulberry32(34)
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!
    for (let round = 0; round < 24; round++) {
      const tree: Tree = {}
      const dirs = ['']
      for (let i = 0; i < 8; i++) {
        const parent = pick(dirs)
        if (parent.split('/').length < 4) dirs.push(parent ? `${parent}/${pick(DIRS)}` : pick(DIRS))
      }
      for (const dir of dirs) {
        for (let i = 0; i < 3; i++) {
          const file = dir ? `${dir}/${pick(FILES)}` : pick(FILES)
          // A name is a file or a directory, not both.
          if (!dirs.includes(file)) tree[file] = needle
        }
        if (random() < 0.6) {
          const lines = Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(PATTERNS))
          tree[dir ? `${dir}/.gitignore` : '.gitignore'] = `${lines.join('\n')}\n`
        }
      }
      await agree(t, tree)
    }
  }, 60_000)
})

const DIRS = ['a', 'b', 'gen', 'build', 'lib', '.hid', 'd e']
const FILES = ['c.txt', 'b.log', 'keep.log', 'x.ts', '1.txt', 'a', '[x].txt', '.env', 'gen', 'build.txt']
const PATTERNS = [
  '*.log',
  '!keep.log',
  'gen/',
  '!gen/',
  '/build',
  'build/',
  '!build',
  '**/a',
  'a/**',
  'a/**/c.txt',
  'lib/*.ts',
  '/*.txt',
  '!*.txt',
  '*.t?t',
  '[ab]*',
  '[!a]*.txt',
  '\\[x\\].txt',
  '*',
  '!*/',
  '.*',
  '!.env',
  'b/',
  '**/gen/**',
  'd e/',
  '[[:digit:]].txt',
  'x.ts',
]

/** A small seeded generator: the same trees every run. */
function mulberry32(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('parseGitignore', () => {
  it('reads lines as git does', () => {
    const { rules } = parseGitignore('\uFEFF#c\n\\#x\n!neg\ndir/\n/anchored\nsp\\ \n  \n\ncr\r\n')
    expect(rules.map(({ negative, dirOnly, basename, literal }) => ({ negative, dirOnly, basename, literal }))).toEqual(
      [
        { negative: false, dirOnly: false, basename: true, literal: '' },
        { negative: true, dirOnly: false, basename: true, literal: 'neg' },
        { negative: false, dirOnly: true, basename: true, literal: 'dir' },
        { negative: false, dirOnly: false, basename: false, literal: 'anchored' },
        { negative: false, dirOnly: false, basename: true, literal: 'sp' },
        { negative: false, dirOnly: false, basename: true, literal: 'cr' },
      ],
    )
    expect(rules[0]!.test('#x')).toBe(true)
    expect(rules[4]!.test('sp ')).toBe(true)
    expect(rules[5]!.test('cr')).toBe(true)
  })
})
