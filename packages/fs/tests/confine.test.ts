// Confinement for every path a tool opens, lists, writes or walks into: dangling links, chains, symlinked folders,
// `..` inside link targets, /proc magic links, and walks whose glob names a path through a link.
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fsKeel, SEARCH_WAYS, type FsKeel } from './support.ts'

describe.each(SEARCH_WAYS)('%s', (_, way) => {
  let t: FsKeel
  // Made at load time: the it.each tables below name paths in it.
  const outside = mkdtempSync(join(tmpdir(), 'keel-outside-'))
  const out = basename(outside)
  beforeAll(async () => {
    t = await fsKeel(way)
    writeFileSync(join(outside, 'secret.txt'), 'top secret\n')
    t.put('inside.txt', 'fine\n')
    t.put('sub/deep/file.txt', 'deep\n')
    const link = (target: string, name: string) => symlinkSync(target, join(t.cwd, name))
    link(join(outside, 'absent.txt'), 'dangling-abs')
    link(`../${out}/absent-rel.txt`, 'dangling-rel')
    link('made/here.txt', 'dangling-inside')
    link('chain2', 'chain1')
    link('chain3', 'chain2')
    link(join(outside, 'chained.txt'), 'chain3')
    link(outside, 'outlink')
    link('/', 'rootlink')
    link('/proc/self/root', 'procroot')
    link('/proc/self/cwd', 'proccwd')
    link('sub', 'sublink')
    // `..` inside a link target, from a link that sits one folder down.
    symlinkSync('../..', join(t.cwd, 'sub/up'))
    symlinkSync('deep/../../..', join(t.cwd, 'sub/level'))
  })
  afterAll(async () => {
    await t.dispose()
    rmSync(outside, { recursive: true, force: true })
  })

  const refused = (text: string) => expect(text).toMatch(/^Error: .*(outside the working directory|is outside)/)

  describe('write never lands outside the cwd', () => {
    it.each([
      ['a dangling link to an absolute path', 'dangling-abs', join(outside, 'absent.txt')],
      ['a dangling link with a relative target', 'dangling-rel', join(outside, 'absent-rel.txt')],
      ['a chain of links ending in a dangling one', 'chain1', join(outside, 'chained.txt')],
      ['a symlinked parent folder', 'outlink/new/planted.txt', join(outside, 'new')],
      ['`..` inside a link target', `sub/up/${out}/dotdot.txt`, join(outside, 'dotdot.txt')],
      ['`..` after a real folder inside a link target', `sub/level/${out}/level.txt`, join(outside, 'level.txt')],
      ['a link to /proc/self/root', `procroot${outside}/proc.txt`, join(outside, 'proc.txt')],
    ])('%s', async (_, path, landing) => {
      const result = await t.run('write', { path, content: 'pwned\n' })
      expect(result.isError).toBe(true)
      refused(result.text)
      expect(existsSync(landing)).toBe(false)
    })

    it('writes through a dangling link whose target is inside: the target is created, the link kept', async () => {
      const result = await t.run('write', { path: 'dangling-inside', content: 'ok\n' })
      expect(result).toEqual({ isError: false, text: 'Created dangling-inside: 3 bytes, 1 line.' })
      expect(readFileSync(join(t.cwd, 'made/here.txt'), 'utf8')).toBe('ok\n')
    })
  })

  describe('writes go through a temp file and a rename', () => {
    it("keep the file's mode, keep a link that points inside, and leave no temp file behind", async () => {
      const script = t.put('tool.sh', 'echo one\n')
      chmodSync(script, 0o750)
      symlinkSync('tool.sh', join(t.cwd, 'tool-link'))
      expect((await t.run('edit', { path: 'tool-link', old_string: 'one', new_string: 'two' })).isError).toBe(false)
      expect((await t.run('write', { path: 'tool.sh', content: 'echo three\n' })).text).toBe(
        'Overwrote tool.sh: 11 bytes, 1 line.',
      )
      expect(statSync(script).mode & 0o777).toBe(0o750)
      expect(lstatSync(join(t.cwd, 'tool-link')).isSymbolicLink()).toBe(true)
      expect(readFileSync(join(t.cwd, 'tool-link'), 'utf8')).toBe('echo three\n')
      expect(readdirSync(t.cwd).filter((name) => name.includes('keel-tmp'))).toEqual([])
    })
  })

  describe('read, edit, ls, grep and glob refuse the same paths', () => {
    it.each([
      ['procroot', `procroot${outside}/secret.txt`],
      ["proccwd (the process cwd, not the agent's)", 'proccwd/package.json'],
      ['a chain', 'chain3'],
      ['.. in a link target', `sub/up/${out}/secret.txt`],
    ])('%s', async (_, path) => {
      for (const [name, args] of [
        ['read', { path }],
        ['edit', { path, old_string: 'top', new_string: 'bottom' }],
        ['grep', { pattern: 'secret', path }],
      ] as const) {
        const { text, isError } = await t.run(name, args)
        expect(isError, `${name} ${path}`).toBe(true)
        refused(text)
      }
      expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n')
    })

    it('refuses to list or walk a folder reached through a link to the outside', async () => {
      for (const path of ['outlink', 'rootlink', 'procroot', `sub/up/${out}`]) {
        for (const name of ['ls', 'glob', 'grep'] as const) {
          const result = await t.run(name, name === 'ls' ? { path } : { pattern: 'x', path })
          expect(result.isError, `${name} ${path}`).toBe(true)
          refused(result.text)
        }
      }
    })
  })

  describe('walks never read or list through a symlinked folder', () => {
    it('grep with a glob that names a path through a link reads nothing out there', async () => {
      for (const glob of [
        'outlink/secret.txt',
        'outlink/*',
        `rootlink${outside}/secret.txt`,
        `rootlink${outside}/*.txt`,
        `procroot${outside}/secret.txt`,
      ]) {
        const result = await t.run('grep', { pattern: 'secret', glob })
        expect(result.isError, glob).toBe(false)
        expect(result.text, glob).toMatch(/^No matches for \/secret\/ in \. \(0 files searched\)\.$/)
      }
    })

    it('glob lists no name out there', async () => {
      for (const pattern of [
        'outlink/secret.txt',
        'outlink/*',
        `rootlink${outside}/*`,
        'rootlink/etc/passwd',
        'procroot/etc/*',
      ]) {
        const result = await t.run('glob', { pattern })
        expect(result.text, pattern).toBe(`No files match ${pattern} in ..`)
      }
    })

    it('does not follow links while walking even when they stay inside (a file is found once, by its real path)', async () => {
      expect((await t.run('glob', { pattern: 'sublink/**/*.txt' })).text).toBe('No files match sublink/**/*.txt in ..')
      expect((await t.run('glob', { pattern: '**/file.txt' })).text).toBe('sub/deep/file.txt')
      expect((await t.run('grep', { pattern: 'deep', glob: 'sublink/deep/file.txt' })).text).toMatch(/^No matches/)
      // Named as the path, a link that stays inside is followed.
      expect((await t.run('grep', { pattern: 'deep', path: 'sublink' })).text).toBe('sublink/deep/file.txt:1: deep')
    })
  })

  describe('allowOutsideCwd', () => {
    it('lets a write follow a dangling link out when configured', async () => {
      const open = await fsKeel({ ...way, allowOutsideCwd: true })
      try {
        symlinkSync(join(outside, 'allowed.txt'), join(open.cwd, 'dangling'))
        mkdirSync(join(open.cwd, 'd'))
        expect(await open.run('write', { path: 'dangling', content: 'x\n' })).toEqual({
          isError: false,
          text: 'Created dangling: 2 bytes, 1 line.',
        })
        expect(readFileSync(join(outside, 'allowed.txt'), 'utf8')).toBe('x\n')
      } finally {
        await open.dispose()
      }
    })
  })
})
