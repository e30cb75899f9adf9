// The parts of the ripgrep path that decide whether it may run at all: a JavaScript regex it can take (or not), and
// the ripgrep found. search.test.ts and the others run every grep and glob both through ripgrep and without it.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { withRipgrepIgnoring } from '../src/rg-ignore.ts'
import { RipgrepFailed, ripgrep, runRipgrep, toRipgrepRegex } from '../src/ripgrep.ts'

const installed = (() => {
  try {
    execFileSync('rg', ['--version'])
    return true
  } catch {
    return false
  }
})()

describe('toRipgrepRegex', () => {
  it('passes plain syntax, spells escaped punctuation as code points and makes \\b \\B \\W \\D ASCII', () => {
    expect(toRipgrepRegex('export\\s+const\\s+\\w+')).toBe('export\\s+const\\s+\\w+')
    expect(toRipgrepRegex('a\\.b\\/c')).toBe('a\\x{2e}b\\x{2f}c')
    expect(toRipgrepRegex('\\bfoo\\W')).toBe('(?-u:\\b)foo(?-u:\\W)')
    expect(toRipgrepRegex('x{2,3}(?:y|z)[a-z_]}')).toBe('x{2,3}(?:y|z)[a-z_]\\x{7d}')
  })

  it('declines what ripgrep reads differently or not at all', () => {
    for (const source of ['(?=a)', '(?<n>a)', '(a)\\1', '[[:alpha:]]', '[a&&b]', '[^]', '\\pL', 'a{', '[\\b]', '\\cA'])
      expect(toRipgrepRegex(source), source).toBeUndefined()
  })
})

describe('ripgrep', () => {
  it("is none when the config says '' or names no ripgrep", async () => {
    expect(await ripgrep('')).toBeUndefined()
    expect(await ripgrep('/nonexistent/rg')).toBeUndefined()
  })

  it.runIf(installed || process.env.CI === 'true')('is the system rg when there is one', async () => {
    expect((await ripgrep('rg'))?.command).toBe('rg')
  })

  it.runIf(installed || process.env.CI === 'true')(
    'fails on a flag or pattern it does not take, and passes over a file it cannot read',
    async () => {
      const rg = (await ripgrep('rg'))!
      const dir = mkdtempSync(join(tmpdir(), 'keel-rg-run-'))
      const signal = new AbortController().signal
      const lines: string[] = []
      try {
        writeFileSync(join(dir, 'a.txt'), 'hit\n')
        writeFileSync(join(dir, 'locked.txt'), 'hit\n', { mode: 0 })
        const root = process.getuid?.() === 0
        await runRipgrep(rg, dir, ['--files-with-matches', '-e', 'hit', '.'], '\n', signal, (line) => lines.push(line))
        expect(lines.filter(Boolean).sort()).toEqual(root ? ['./a.txt', './locked.txt'] : ['./a.txt'])
        // An older ripgrep answers an unknown flag with exit 2 and a message: a failure, never "no matches".
        await expect(runRipgrep(rg, dir, ['--no-such-flag', '.'], '\n', signal, () => undefined)).rejects.toThrow(
          RipgrepFailed,
        )
        await expect(runRipgrep(rg, dir, ['-e', '(', '.'], '\n', signal, () => undefined)).rejects.toThrow(
          RipgrepFailed,
        )
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})

describe('withRipgrepIgnoring', () => {
  const run = (root: string, cwd = root) =>
    withRipgrepIgnoring(root, cwd, true, new AbortController().signal, async (flags) => flags)

  it('lets ripgrep read the .gitignore files only where Keel would read every one, and reads them as git does', async () => {
    const top = mkdtempSync(join(tmpdir(), 'keel-rg-ignore-'))
    try {
      const repo = join(top, 'repo')
      mkdirSync(join(repo, '.git'), { recursive: true })
      mkdirSync(join(repo, 'sub/dist'), { recursive: true })
      writeFileSync(join(repo, '.gitignore'), 'dist/\n')
      writeFileSync(join(repo, 'sub/.gitignore'), '*.tmp\n')
      expect(await run(repo)).toEqual([
        '--no-require-git',
        '--no-ignore-dot',
        '--no-ignore-exclude',
        '--no-ignore-global',
      ])
      // Asked for by name, a directory the rules above ignore is searched without them.
      expect(await run(join(repo, 'sub/dist'))).toContain('--no-ignore-parent')
      // In a directory the walk prunes unopened, a FIFO is never met.
      execFileSync('mkfifo', [join(repo, 'sub/dist/.gitignore')])
      expect(await run(repo)).toBeDefined()
      for (const [what, make] of [
        ['a FIFO', (at: string) => execFileSync('mkfifo', [at])],
        ['a link', (at: string) => symlinkSync('/dev/zero', at)],
        ['over 1 MB', (at: string) => writeFileSync(at, '#\n'.repeat(600_000))],
      ] as const) {
        const at = join(repo, 'sub/deeper/.gitignore')
        mkdirSync(join(repo, 'sub/deeper'), { recursive: true })
        make(at)
        expect(await run(repo), what).toBeUndefined()
        rmSync(at)
      }
      // A line ripgrep reads differently from git, below or above the root; not in a directory it never enters.
      rmSync(join(repo, 'sub/dist/.gitignore'))
      for (const line of ['{a,b}', '[[:digit:]]', 'x\t', '[\\]]', '[a-c-e]']) {
        writeFileSync(join(repo, 'sub/dist/.gitignore'), `${line}\n`)
        expect(await run(repo), line).toBeDefined()
        writeFileSync(join(repo, 'sub/deeper/.gitignore'), `ok\n${line}\n`)
        expect(await run(repo), line).toBeUndefined()
        expect(await run(join(repo, 'sub/deeper')), line).toBeUndefined()
        rmSync(join(repo, 'sub/deeper/.gitignore'))
        expect(await run(join(repo, 'sub/deeper')), line).toBeDefined()
      }
      rmSync(join(repo, 'sub/dist/.gitignore'))
      // ripgrep reads every .gitignore above the root up to /: a FIFO above the repository stops it too.
      execFileSync('mkfifo', [join(top, '.gitignore')])
      expect(await run(repo)).toBeUndefined()
      rmSync(join(top, '.gitignore'))
      // Outside a repository ripgrep would apply one above the cwd, which Keel does not.
      rmSync(join(repo, '.git'), { recursive: true })
      writeFileSync(join(top, '.gitignore'), '*.txt\n')
      expect(await run(repo)).toBeUndefined()
      expect(await run(repo, top)).toBeDefined()
    } finally {
      rmSync(top, { recursive: true, force: true })
    }
  })
})
