// The parts of the ripgrep path that decide whether it may run at all: a JavaScript regex it can take (or not), and
// the ripgrep found. search.test.ts and the others run every grep and glob both through ripgrep and without it.
import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { ripgrep, toRipgrepRegex } from '../src/ripgrep.ts'

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
})
