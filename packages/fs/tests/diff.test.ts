import { describe, expect, it } from 'vitest'
import { diffDetails, unifiedDiff } from '@keel/fs'
import { applyUnifiedDiff } from './patch.ts'

/** A deterministic pseudo-random generator, so a failure reproduces. */
function random(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x7fffffff
  }
}

describe('unifiedDiff', () => {
  it('prints hunks with three lines of context and correct headers', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i + 1}`).join('\n') + '\n'
    const after = before.replace('l10\n', 'ten\nten and a half\n')
    const diff = unifiedDiff(before, after)
    expect(diff.lines).toEqual([
      '@@ -7,7 +7,8 @@',
      ' l7',
      ' l8',
      ' l9',
      '-l10',
      '+ten',
      '+ten and a half',
      ' l11',
      ' l12',
      ' l13',
    ])
    expect(diff).toMatchObject({ added: 2, removed: 1 })
  })

  it('merges nearby changes into one hunk and keeps distant ones apart', () => {
    const before = Array.from({ length: 40 }, (_, i) => `l${i + 1}`).join('\n') + '\n'
    const after = before.replace('l5\n', 'five\n').replace('l9\n', 'nine\n').replace('l30\n', 'thirty\n')
    const headers = unifiedDiff(before, after).lines.filter((line) => line.startsWith('@@'))
    expect(headers).toEqual(['@@ -2,11 +2,11 @@', '@@ -27,7 +27,7 @@'])
  })

  it('marks a missing final newline, and handles creation from empty and deletion to empty', () => {
    expect(unifiedDiff('a\nb', 'a\nc').lines).toEqual([
      '@@ -1,2 +1,2 @@',
      ' a',
      '-b',
      '\\ No newline at end of file',
      '+c',
      '\\ No newline at end of file',
    ])
    expect(unifiedDiff('', 'x\n').lines).toEqual(['@@ -0,0 +1,1 @@', '+x'])
    expect(unifiedDiff('x\n', '').lines).toEqual(['@@ -1,1 +0,0 @@', '-x'])
    expect(unifiedDiff('same\n', 'same\n').lines).toEqual([])
  })

  it('hides the CR of CRLF lines but still diffs on the real bytes', () => {
    expect(unifiedDiff('a\r\nb\r\n', 'a\r\nc\r\n').lines).toEqual(['@@ -1,2 +1,2 @@', ' a', '-b', '+c'])
  })

  it('round-trips: applying the printed diff to the old text gives the new text (random edits)', () => {
    const rand = random(7)
    const words = ['alpha', 'beta', 'gamma', 'delta', '', '  indented', 'é ü 日本']
    for (let round = 0; round < 300; round++) {
      const old = Array.from({ length: Math.floor(rand() * 30) }, () => words[Math.floor(rand() * words.length)]!)
      const next = [...old]
      for (let edits = Math.floor(rand() * 6); edits > 0; edits--) {
        const at = Math.floor(rand() * (next.length + 1))
        const action = rand()
        if (action < 0.33) next.splice(at, 1)
        else if (action < 0.66) next.splice(at, 0, words[Math.floor(rand() * words.length)]!)
        else next[at] = `changed ${round}`
      }
      const oldText = old.join('\n') + (rand() < 0.5 ? '\n' : '')
      const newText = next.filter((w) => w !== undefined).join('\n') + (rand() < 0.5 ? '\n' : '')
      expect(applyUnifiedDiff(oldText, unifiedDiff(oldText, newText).lines), `round ${round}`).toBe(newText)
    }
  })

  it('finds a minimal script for small changes', () => {
    const diff = unifiedDiff('a\nb\nc\nd\n', 'a\nx\nc\nd\ne\n')
    expect(diff.lines.filter((line) => line[0] === '-' || line[0] === '+')).toEqual(['-b', '+x', '+e'])
    expect(diff.hunks).toHaveLength(1)
  })

  it('falls back to one block replacement past the edit budget, still correct', () => {
    const a = Array.from({ length: 3000 }, (_, i) => `a${i}\n`).join('')
    const b = Array.from({ length: 3000 }, (_, i) => `b${i}\n`).join('')
    const diff = unifiedDiff(`head\n${a}tail\n`, `head\n${b}tail\n`)
    expect(diff).toMatchObject({ added: 3000, removed: 3000 })
    expect(diff.lines[0]).toBe('@@ -1,3002 +1,3002 @@')
    expect(applyUnifiedDiff(`head\n${a}tail\n`, diff.lines)).toBe(`head\n${b}tail\n`)
  })
})

describe('diffDetails', () => {
  it('keeps the hunks for front ends, bounded in lines and line length, and counts what it left out', () => {
    const before = Array.from({ length: 30 }, (_, i) => `l${i + 1}`).join('\n') + '\n'
    const after = before.replace('l5\n', `${'x'.repeat(50)}\n`).replace('l25\n', 'twenty-five\n')
    const details = diffDetails('a.txt', unifiedDiff(before, after), { created: false, maxLines: 9, maxLineChars: 10 })
    expect(details).toMatchObject({ kind: 'diff', path: 'a.txt', created: false, added: 2, removed: 2 })
    expect(details.hunks).toHaveLength(2)
    expect(details.hunks[0]!.lines).toContain(`+${'x'.repeat(10)} …`)
    expect(details.hunks[1]!.lines).toEqual([' l22'])
    expect(details.omitted).toBe(7)
  })
})
