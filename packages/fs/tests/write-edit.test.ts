import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyUnifiedDiff, diffOfResult } from './patch.ts'
import { fsKeel, type FsKeel } from './support.ts'

let t: FsKeel
beforeAll(async () => {
  t = await fsKeel({ maxEditBytes: 1024 * 1024 })
})
afterAll(() => t.dispose())
const disk = (path: string) => readFileSync(join(t.cwd, path))

describe('write', () => {
  it('creates parent directories and reports bytes and lines', async () => {
    expect(await t.run('write', { path: 'a/b/c.txt', content: 'héllo\nwörld\n' })).toEqual({
      isError: false,
      text: 'Created a/b/c.txt: 14 bytes, 2 lines.',
    })
    expect(disk('a/b/c.txt').toString('utf8')).toBe('héllo\nwörld\n')
  })

  it('overwrites, and counts a last line without a newline', async () => {
    expect(await t.run('write', { path: 'a/b/c.txt', content: 'x\ny' })).toEqual({
      isError: false,
      text: 'Overwrote a/b/c.txt: 3 bytes, 2 lines.',
    })
    expect(await t.run('write', { path: 'empty.txt', content: '' })).toEqual({
      isError: false,
      text: 'Created empty.txt: 0 bytes, 0 lines.',
    })
  })

  it('gives front ends the change as `details`: all added for a new file, a real diff for an overwrite', async () => {
    const created = await t.call('write', { path: 'd/new.txt', content: 'one\ntwo\n' })
    expect(created.details).toEqual({
      kind: 'diff',
      path: 'd/new.txt',
      created: true,
      added: 2,
      removed: 0,
      omitted: 0,
      hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2, lines: ['+one', '+two'] }],
    })
    const overwritten = await t.call('write', { path: 'd/new.txt', content: 'one\n2\n' })
    expect(overwritten.details).toMatchObject({
      created: false,
      added: 1,
      removed: 1,
      hunks: [{ lines: [' one', '-two', '+2'] }],
    })
    // A binary file's old bytes are no diff: the write still happens, with its summary alone.
    t.put('d/blob.bin', Buffer.from([0, 1, 2, 0, 255]))
    const binary = await t.call('write', { path: 'd/blob.bin', content: 'text now\n' })
    expect(binary).toMatchObject({ isError: false })
    expect(binary.details).toBeUndefined()
  })

  it('refuses to write over a directory', async () => {
    expect(await t.run('write', { path: 'a/b', content: 'x' })).toEqual({
      isError: true,
      text: 'Error: a/b is a directory',
    })
  })
})

describe('edit', () => {
  it('replaces one exact match and shows a diff that matches the file on disk', async () => {
    const before = 'function add(a, b) {\n  return a + b\n}\n\nexport { add }\n'
    t.put('src/add.js', before)
    const { text, isError } = await t.run('edit', {
      path: 'src/add.js',
      old_string: '  return a + b\n',
      new_string: '  // sum\n  return a + b\n',
    })
    expect(isError).toBe(false)
    expect(text).toBe(
      [
        'Edited src/add.js: 1 replacement at line 2 (+1 -0 lines).',
        '--- src/add.js',
        '+++ src/add.js',
        '@@ -1,4 +1,5 @@',
        ' function add(a, b) {',
        '+  // sum',
        '   return a + b',
        ' }',
        ' ',
      ].join('\n'),
    )
    const after = disk('src/add.js').toString('utf8')
    expect(after).toBe('function add(a, b) {\n  // sum\n  return a + b\n}\n\nexport { add }\n')
    expect(applyUnifiedDiff(before, diffOfResult(text))).toBe(after)
    const { details } = await t.call('edit', { path: 'src/add.js', old_string: '  // sum\n', new_string: '' })
    expect(details).toEqual({
      kind: 'diff',
      path: 'src/add.js',
      created: false,
      added: 0,
      removed: 1,
      omitted: 0,
      hunks: [
        {
          oldStart: 1,
          oldLines: 5,
          newStart: 1,
          newLines: 4,
          lines: [' function add(a, b) {', '-  // sum', '   return a + b', ' }', ' '],
        },
      ],
    })
  })

  it('refuses an edit that matches twice, saying how many and where, and leaves the file alone', async () => {
    const before = 'let x = 1\nlet y = 2\nlet x2 = 1\n'
    t.put('twice.ts', before)
    const { text, isError } = await t.run('edit', { path: 'twice.ts', old_string: '= 1', new_string: '= 9' })
    expect(isError).toBe(true)
    expect(text).toBe(
      'Error: old_string matches 2 times in twice.ts (lines 1, 3); add surrounding lines to make it unique, or set replace_all to change every one',
    )
    expect(disk('twice.ts').toString()).toBe(before)
  })

  it('replace_all changes every match', async () => {
    const { text } = await t.run('edit', { path: 'twice.ts', old_string: '= 1', new_string: '= 9', replace_all: true })
    expect(text.split('\n')[0]).toBe('Edited twice.ts: 2 replacements at lines 1, 3 (+2 -2 lines).')
    expect(disk('twice.ts').toString()).toBe('let x = 9\nlet y = 2\nlet x2 = 9\n')
  })

  it('says when nothing matches, with a hint when only the indentation differs', async () => {
    t.put('indent.py', 'def f():\n    return 1\n')
    const plain = await t.run('edit', { path: 'indent.py', old_string: 'return 2', new_string: 'return 3' })
    expect(plain).toEqual({
      isError: true,
      text: 'Error: old_string was not found in indent.py. Read the file again and copy the text exactly, whitespace included.',
    })
    const indented = await t.run('edit', {
      path: 'indent.py',
      old_string: 'def f():\n  return 1',
      new_string: 'def f():\n  return 3',
    })
    expect(indented.text).toBe(
      'Error: old_string was not found in indent.py. It nearly matches at line 1, differing only by indentation (tabs vs spaces, or its depth): line 2 of the file is "    return 1"; old_string has "  return 1". Copy the file\'s characters exactly.',
    )
    const numbered = await t.run('edit', { path: 'indent.py', old_string: '     2\t    return 1', new_string: 'x' })
    expect(numbered.text).toContain('line-number prefix from read output')
  })

  // Each kind of difference a model cannot see in read output: the hint names it and quotes both lines, escaped so
  // the difference shows, and the file is left byte for byte as it was.
  it.each([
    ['quotes.py', 'msg = “bye”\n', 'msg = "bye"', 'typographic quotes', '"msg = “bye”"'],
    ['dash.md', 'a – b\n', 'a - b', 'typographic quotes or dashes', '"a – b"'],
    ['trail.py', 'def f():  \n    return 1\n', 'def f():\n    return 1', 'trailing whitespace', '"def f():  "'],
    ['tabs.go', 'func a() {\n\treturn 1\n}\n', 'func a() {\n    return 1\n}', 'indentation', '"\\treturn 1"'],
    ['mixed.txt', 'a\r\nb\r\nc\nd\ne\nf\n', 'a\nb', 'line endings (the file has CRLF)', '"a\\r"'],
    ['nbsp.txt', 'a\u00a0b\n', 'a b', 'non-breaking', '"a\\u00a0b"'],
    ['nfd.txt', 'cafe\u0301\n', 'caf\u00e9', 'Unicode normalization', '"cafe\\u0301"'],
    ['both.py', 's = “x”  \nt = 1\n', 's = "x"\nt = 1', 'trailing whitespace and typographic quotes', '"s = “x”  "'],
  ])('a near miss in %s names the difference', async (file, content, old, kind, quoted) => {
    t.put(file, content)
    const { isError, text } = await t.run('edit', { path: file, old_string: old, new_string: 'X' })
    expect(isError).toBe(true)
    expect(text).toContain(`old_string was not found in ${file}. It nearly matches at line 1, differing only by`)
    expect(text).toContain(kind)
    expect(text).toContain(`of the file is ${quoted}`)
    expect(disk(file).toString()).toBe(content)
  })

  it('a literal \\n where the file has line breaks is named', async () => {
    t.put('esc.txt', 'line one\nline 2\n')
    const { text } = await t.run('edit', { path: 'esc.txt', old_string: 'line one\\nline 2', new_string: 'x' })
    expect(text).toContain('old_string contains \\n as two characters')
  })

  it('keeps CRLF line endings, both in matched and in new lines', async () => {
    t.put('win.txt', 'first\r\nsecond\r\nthird\r\n')
    const { text, isError } = await t.run('edit', {
      path: 'win.txt',
      old_string: 'first\nsecond\n',
      new_string: 'first\nnew\nsecond\n',
    })
    expect(isError).toBe(false)
    expect(text.split('\n')[0]).toBe('Edited win.txt: 1 replacement at line 1 (+1 -0 lines; CRLF line endings kept).')
    expect(disk('win.txt').toString()).toBe('first\r\nnew\r\nsecond\r\nthird\r\n')
    await t.run('edit', { path: 'win.txt', old_string: 'third', new_string: 'third\nfourth' })
    expect(disk('win.txt').toString()).toBe('first\r\nnew\r\nsecond\r\nthird\r\nfourth\r\n')
  })

  it('leaves LF files LF even when the model sends CRLF', async () => {
    t.put('unix.txt', 'a\nb\n')
    await t.run('edit', { path: 'unix.txt', old_string: 'a\r\nb', new_string: 'a\r\nB' })
    expect(disk('unix.txt').toString()).toBe('a\nB\n')
  })

  it('keeps UTF-8 and a BOM byte for byte', async () => {
    const before = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('naïve — 日本語 🎉\nzwei\n', 'utf8')])
    t.put('utf8.txt', before)
    const { isError } = await t.run('edit', { path: 'utf8.txt', old_string: '日本語 🎉', new_string: 'にほんご 🎊' })
    expect(isError).toBe(false)
    expect(disk('utf8.txt')).toEqual(
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('naïve — にほんご 🎊\nzwei\n', 'utf8')]),
    )
  })

  it('refuses files that are not valid UTF-8 rather than corrupting them', async () => {
    const latin1 = Buffer.from('caf\xe9\nbar\n', 'latin1')
    t.put('latin1.txt', latin1)
    const { text, isError } = await t.run('edit', { path: 'latin1.txt', old_string: 'bar', new_string: 'baz' })
    expect(isError).toBe(true)
    expect(text).toBe('Error: latin1.txt is not valid UTF-8; edit would corrupt it')
    expect(disk('latin1.txt')).toEqual(latin1)
  })

  it('refuses binary files, missing files, empty and no-op edits, and files over the limit', async () => {
    t.put('b.bin', Buffer.from([1, 2, 0, 3]))
    expect((await t.run('edit', { path: 'b.bin', old_string: 'a', new_string: 'b' })).text).toBe(
      'Error: b.bin is not a text file (it contains NUL bytes); edit changes text files only',
    )
    expect((await t.run('edit', { path: 'ghost.ts', old_string: 'a', new_string: 'b' })).text).toBe(
      'Error: ghost.ts does not exist; use write to create it',
    )
    expect((await t.run('edit', { path: 'twice.ts', old_string: '', new_string: 'b' })).text).toBe(
      'Error: old_string is empty; to create or overwrite a whole file use write',
    )
    expect((await t.run('edit', { path: 'twice.ts', old_string: 'let', new_string: 'let' })).text).toBe(
      'Error: old_string and new_string are identical; there is nothing to change',
    )
    t.put('huge.txt', 'x'.repeat(1024 * 1024 + 1))
    expect((await t.run('edit', { path: 'huge.txt', old_string: 'x', new_string: 'y' })).text).toBe(
      'Error: huge.txt is 1.0 MB, over the 1.0 MB edit limit',
    )
  })
})

describe('edit with a small diff budget', () => {
  it('cuts the diff and says how much', async () => {
    const small = await fsKeel({ maxDiffLines: 4 })
    try {
      small.put('many.txt', Array.from({ length: 30 }, (_, i) => `v${i % 2}`).join('\n') + '\n')
      const { text } = await small.run('edit', {
        path: 'many.txt',
        old_string: 'v1',
        new_string: 'w1',
        replace_all: true,
      })
      const lines = text.split('\n')
      expect(lines).toHaveLength(3 + 4 + 1)
      expect(lines.at(-1)).toMatch(/^… \d+ more diff lines not shown$/)
    } finally {
      await small.dispose()
    }
  })
})
