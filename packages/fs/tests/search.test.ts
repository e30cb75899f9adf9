import { linkSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { textOfContent } from '../../../test-support/harness.ts'
import { fsKeel, SEARCH_WAYS, type FsKeel } from './support.ts'

/**
 * The large tree of the cancel test (100 folders of 60 files), built once for both ways and moved into each keel's
 * cwd folder by folder. Creating a file costs far more than linking one on some disks (0.7 ms against 0.07 here):
 * the first folder's files are written, the other folders' are hard links to them. Gives the tree back with `release`.
 */
let bigTree: string | undefined
function lendBigTree(cwd: string): { release(): void } {
  if (!bigTree) {
    bigTree = mkdtempSync(join(tmpdir(), 'keel-big-tree-'))
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(bigTree, `d${d}`))
      for (let f = 0; f < 60; f++) {
        const file = join(bigTree, `d${d}`, `f${f}.txt`)
        if (d === 0) writeFileSync(file, `line ${f}\n`.repeat(20))
        else linkSync(join(bigTree, 'd0', `f${f}.txt`), file)
      }
    }
  }
  const home = bigTree
  for (let d = 0; d < 100; d++) renameSync(join(home, `d${d}`), join(cwd, `d${d}`))
  return { release: () => Array.from({ length: 100 }, (_, d) => renameSync(join(cwd, `d${d}`), join(home, `d${d}`))) }
}
afterAll(() => {
  if (bigTree) rmSync(bigTree, { recursive: true, force: true })
})

describe.each(SEARCH_WAYS)('%s', (_, way) => {
  let t: FsKeel
  beforeAll(async () => {
    t = await fsKeel({ ...way, maxGrepMatches: 5, maxEntries: 4 })
    mkdirSync(join(t.cwd, '.git'))
    t.put('.git/config', 'TODO in git config\n')
    t.put('.gitignore', '# build output\ndist/\n*.log\nout\n/secret.txt\n')
    t.put('src/main.ts', 'const a = 1 // TODO tidy\nexport const b = 2\n')
    t.put('src/util.ts', 'export function util() {}\n// todo lower case\n')
    t.put('src/out/gen.ts', '// TODO generated\n')
    t.put('src/notes.log', 'TODO in a log\n')
    t.put('src/keep/.gitignore', '!important.log\n')
    t.put('src/keep/important.log', 'TODO keep me\n')
    t.put('src/keep/other.log', 'TODO not me\n')
    t.put('dist/bundle.js', 'TODO in dist\n')
    t.put('dist/.gitignore', '!bundle.js\n') // git never opens an ignored directory, so this cannot re-include
    t.put('node_modules/pkg/index.js', 'TODO in node_modules\n')
    t.put('secret.txt', 'TODO secret\n')
    t.put('docs/secret.txt', 'TODO not the anchored one\n')
    t.put('README.md', '# Title\nTODO readme\n')
    t.put('image.bin', Buffer.from([0x00, 0x54, 0x4f, 0x44, 0x4f]))
  })
  afterAll(() => t.dispose())

  describe('grep', () => {
    it('prints file:line: text, respecting .gitignore (nested, negated, anchored) and skipping node_modules, .git and binaries', async () => {
      const { text, isError } = await t.run('grep', { pattern: 'TODO' })
      expect(isError).toBe(false)
      expect(text).toBe(
        [
          'README.md:2: TODO readme',
          'docs/secret.txt:1: TODO not the anchored one',
          'src/keep/important.log:1: TODO keep me',
          'src/main.ts:1: const a = 1 // TODO tidy',
        ].join('\n'),
      )
    })

    it('filters by glob (a bare glob matches at any depth) and by path', async () => {
      expect((await t.run('grep', { pattern: 'export', glob: '*.ts' })).text).toBe(
        'src/main.ts:2: export const b = 2\nsrc/util.ts:1: export function util() {}',
      )
      expect((await t.run('grep', { pattern: 'TODO', path: 'src', glob: 'main.*' })).text).toBe(
        'src/main.ts:1: const a = 1 // TODO tidy',
      )
    })

    it('matches case-insensitively on request', async () => {
      const { text } = await t.run('grep', { pattern: 'todo', path: 'src/util.ts', ignore_case: true })
      expect(text).toBe('src/util.ts:2: // todo lower case')
    })

    it('searches a file named explicitly even when it is gitignored', async () => {
      expect((await t.run('grep', { pattern: 'TODO', path: 'src/notes.log' })).text).toBe(
        'src/notes.log:1: TODO in a log',
      )
    })

    it('is bounded and says how much was cut', async () => {
      t.put('many/a.txt', Array.from({ length: 8 }, (_, i) => `hit ${i}`).join('\n'))
      t.put('many/b.txt', 'hit x\nhit y\nhit z\nhit w\n')
      const { text } = await t.run('grep', { pattern: '^hit', path: 'many' })
      const lines = text.split('\n')
      expect(lines).toHaveLength(6)
      expect(lines[4]).toBe('many/a.txt:5: hit 4')
      expect(lines[5]).toBe('… 7 more matches not shown (12 in 2 files); narrow the pattern, path or glob.')
    })

    it('cuts long lines around the match', async () => {
      t.put('wide/min.js', `${'a'.repeat(1000)}NEEDLE${'b'.repeat(1000)}\n`)
      const { text } = await t.run('grep', { pattern: 'NEEDLE', path: 'wide' })
      const shown = text.slice('wide/min.js:1: '.length)
      expect(shown).toBe(`…${'a'.repeat(100)}NEEDLE${'b'.repeat(194)}…`)
    })

    it('reports no matches plainly, and errors for a bad regex, a missing path, a binary file and an escaping glob', async () => {
      expect(await t.run('grep', { pattern: 'zzz-nothing', path: 'src' })).toEqual({
        isError: false,
        text: 'No matches for /zzz-nothing/ in src (4 files searched).',
      })
      const bad = await t.run('grep', { pattern: 'a(b' })
      expect(bad.isError).toBe(true)
      expect(bad.text).toMatch(/^Error: invalid regular expression: .*Unterminated group/)
      expect(await t.run('grep', { pattern: 'x', path: 'nowhere' })).toEqual({
        isError: true,
        text: 'Error: nowhere does not exist',
      })
      expect(await t.run('grep', { pattern: 'x', path: 'image.bin' })).toEqual({
        isError: true,
        text: 'Error: image.bin is a binary file; grep searches text only',
      })
      expect((await t.run('grep', { pattern: 'x', glob: '../*.ts' })).text).toBe(
        'Error: glob must be relative and stay inside the searched directory; put the directory in path',
      )
    })

    it('skips files over the size limit and says so', async () => {
      const small = await fsKeel({ ...way, maxGrepFileBytes: 10 })
      try {
        small.put('big.txt', 'needle in a big file\n')
        small.put('tiny.txt', 'needle\n')
        expect((await small.run('grep', { pattern: 'needle' })).text).toBe(
          'tiny.txt:1: needle\n(1 file over 10 B skipped)',
        )
      } finally {
        await small.dispose()
      }
    })
  })

  describe('glob', () => {
    it('finds files by pattern, respecting .gitignore', async () => {
      expect((await t.run('glob', { pattern: '**/*.log' })).text).toBe('src/keep/important.log')
      expect((await t.run('glob', { pattern: '*.ts', path: 'src' })).text).toBe('src/main.ts\nsrc/util.ts')
    })

    it('never lists node_modules or .git, even when asked', async () => {
      expect((await t.run('glob', { pattern: 'node_modules/**' })).text).toBe('No files match node_modules/** in ..')
      expect((await t.run('glob', { pattern: '.git/*' })).text).toBe('No files match .git/* in ..')
    })

    it('is bounded and says how much was cut', async () => {
      const { text } = await t.run('glob', { pattern: '**/*' })
      const lines = text.split('\n')
      expect(lines).toHaveLength(5)
      expect(lines.at(-1)).toMatch(/^… \d+ more files not shown \(\d+ match\); narrow the pattern\.$/)
    })

    it('refuses patterns that leave the directory', async () => {
      expect((await t.run('glob', { pattern: '/etc/*' })).text).toBe(
        'Error: pattern must be relative and stay inside the searched directory; put the directory in path',
      )
    })
  })

  describe('ls', () => {
    it('lists directories first, then files, and counts what it hid', async () => {
      t.put('tree/z.txt', 'z')
      t.put('tree/a.txt', 'a')
      t.put('tree/sub/x', 'x')
      t.put('tree/noise.log', 'x')
      t.put('tree/node_modules/m/i.js', 'x')
      symlinkSync('a.txt', join(t.cwd, 'tree/link'))
      expect((await t.run('ls', { path: 'tree' })).text).toBe(
        'sub/\na.txt\nlink -> a.txt\nz.txt\n(2 entries hidden: gitignored, node_modules or .git)',
      )
    })

    it('lists the cwd by default, bounded', async () => {
      const { text } = await t.run('ls', {})
      const lines = text.split('\n')
      expect(lines.slice(0, 4)).toEqual(['docs/', 'many/', 'src/', 'tree/'])
      expect(lines[4]).toMatch(/^… \d+ more entries not shown; use glob to narrow down\.$/)
      expect(lines[5]).toBe('(4 entries hidden: gitignored, node_modules or .git)')
    })

    it('says so for an empty directory, a file and a missing path', async () => {
      mkdirSync(join(t.cwd, 'void'))
      expect(await t.run('ls', { path: 'void' })).toEqual({ isError: false, text: 'void is empty.' })
      expect(await t.run('ls', { path: 'README.md' })).toEqual({
        isError: true,
        text: 'Error: README.md is a file, not a directory; use read to see it',
      })
      expect(await t.run('ls', { path: 'gone' })).toEqual({ isError: true, text: 'Error: gone does not exist' })
    })
  })

  describe('.gitignore outside a git repository and above the searched directory', () => {
    it("applies the cwd's .gitignore without a .git, and a parent's when searching a subdirectory", async () => {
      const plain = await fsKeel(way)
      try {
        plain.put('.gitignore', 'generated/\n')
        plain.put('pkg/generated/x.ts', 'hit\n')
        plain.put('pkg/real.ts', 'hit\n')
        expect((await plain.run('grep', { pattern: 'hit' })).text).toBe('pkg/real.ts:1: hit')
        expect((await plain.run('grep', { pattern: 'hit', path: 'pkg' })).text).toBe('pkg/real.ts:1: hit')
        expect((await plain.run('glob', { pattern: '**/*.ts', path: 'pkg' })).text).toBe('pkg/real.ts')
        // Asked for by name, an ignored directory is searched; rules below it still apply.
        expect((await plain.run('grep', { pattern: 'hit', path: 'pkg/generated' })).text).toBe(
          'pkg/generated/x.ts:1: hit',
        )
      } finally {
        await plain.dispose()
      }
    })
  })

  describe('the semantics the ripgrep path and the walk share', () => {
    it('finds a file re-included with !pattern, hidden files and folders, never .git; a glob narrows it', async () => {
      const re = await fsKeel(way)
      try {
        mkdirSync(join(re.cwd, '.git'))
        re.put('.git/HEAD', 'needle in git\n')
        re.put('.gitignore', '*.log\n!keep.log\n/build\n')
        re.put('keep.log', 'needle kept\n')
        re.put('drop.log', 'needle dropped\n')
        re.put('.env.example', 'needle hidden file\n')
        re.put('.github/workflows/ci.yml', 'needle hidden folder\n')
        re.put('build/out.txt', 'needle built\n')
        re.put('lib/build/x.txt', 'needle anchored elsewhere\n')
        re.put('lib/.gitignore', '!drop.log\nx.txt\n')
        re.put('lib/drop.log', 'needle re-included below\n')
        expect((await re.run('grep', { pattern: 'needle' })).text).toBe(
          [
            '.env.example:1: needle hidden file',
            '.github/workflows/ci.yml:1: needle hidden folder',
            'keep.log:1: needle kept',
            'lib/drop.log:1: needle re-included below',
          ].join('\n'),
        )
        expect((await re.run('glob', { pattern: '**/*.log' })).text).toBe('keep.log\nlib/drop.log')
        expect((await re.run('grep', { pattern: 'needle', glob: '*.log' })).text).toBe(
          'keep.log:1: needle kept\nlib/drop.log:1: needle re-included below',
        )
        expect((await re.run('grep', { pattern: 'zzz', glob: '*.log' })).text).toBe(
          'No matches for /zzz/ in . (2 files searched).',
        )
        // Case-insensitive and regex searches take the same files.
        expect((await re.run('grep', { pattern: 'NEEDLE K', ignore_case: true })).text).toBe('keep.log:1: needle kept')
        expect((await re.run('grep', { pattern: 'needle (kept|built)' })).text).toBe('keep.log:1: needle kept')
      } finally {
        await re.dispose()
      }
    })

    it('applies no .gitignore above the repository top, nor, outside a repository, above the cwd', async () => {
      const up = await fsKeel({ ...way, allowOutsideCwd: true })
      try {
        up.put('.gitignore', '*.txt\n')
        mkdirSync(join(up.cwd, 'repo/.git'), { recursive: true })
        up.put('repo/a.txt', 'needle\n')
        expect((await up.run('grep', { pattern: 'needle', path: 'repo' })).text).toBe('repo/a.txt:1: needle')
        expect((await up.run('glob', { pattern: '*', path: 'repo' })).text).toBe('repo/a.txt')
        // A directory outside the cwd and outside any repository: the .gitignore beside it is not the cwd's.
        up.put('plain/sub/b.txt', 'needle\n')
        up.put('plain/.gitignore', '*.txt\n')
        const sub = join(up.cwd, 'plain/sub')
        const inner = await fsKeel({ ...way, allowOutsideCwd: true })
        try {
          expect((await inner.run('grep', { pattern: 'needle', path: sub })).text).toBe(`${sub}/b.txt:1: needle`)
          expect((await inner.run('glob', { pattern: '*', path: sub })).text).toBe(`${sub}/b.txt`)
        } finally {
          await inner.dispose()
        }
      } finally {
        await up.dispose()
      }
    })

    it('stops on cancel in the middle of a large tree, and keeps the loop turning', async () => {
      const big = await fsKeel({ ...way, timeoutMs: 600_000 })
      const tree = lendBigTree(big.cwd)
      try {
        for (const [name, args] of [
          ['grep', { pattern: 'line 7' }],
          ['grep', { pattern: 'line [7]' }],
          ['glob', { pattern: '**/*.txt' }],
        ] as const) {
          const controller = new AbortController()
          let ticks = 0
          // Aborted from a timer: it fires during the call only if the loop is free.
          const timer = setInterval(() => {
            if (++ticks === 1) controller.abort()
          }, 1)
          const calling = big.call(name, args, controller.signal)
          const result = await calling
          clearInterval(timer)
          expect(ticks, name).toBeGreaterThanOrEqual(1)
          expect({ isError: result.isError, text: textOfContent(result.content) }, name).toEqual({
            isError: true,
            text: 'Error: tool call aborted',
          })
        }
      } finally {
        tree.release()
        await big.dispose()
      }
    }, 60_000)
  })

  describe('.gitignore rules that cannot be pruned while walking', () => {
    it('still hides an ignored directory whose own .gitignore tries to re-include a file', async () => {
      const neg = await fsKeel(way)
      try {
        // The negation stops the walk from pruning build/, so the per-directory check has to do the hiding.
        neg.put('.gitignore', 'build/\n*.tmp\n!keep.tmp\n')
        neg.put('build/.gitignore', '!x.txt\n')
        neg.put('build/x.txt', 'x')
        neg.put('keep.tmp', 'k')
        neg.put('drop.tmp', 'd')
        neg.put('src/build/y.txt', 'y')
        neg.put('src/ok.txt', 'o')
        expect((await neg.run('glob', { pattern: '**/*' })).text).toBe('.gitignore\nkeep.tmp\nsrc/ok.txt')
      } finally {
        await neg.dispose()
      }
    })
  })
})
