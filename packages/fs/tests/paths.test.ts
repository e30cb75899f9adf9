import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fsKeel, type FsKeel } from './support.ts'

let t: FsKeel
let outside: string
beforeAll(async () => {
  t = await fsKeel()
  outside = mkdtempSync(join(tmpdir(), 'keel-outside-'))
  writeFileSync(join(outside, 'secret.txt'), 'top secret\n')
  t.put('inside.txt', 'fine\n')
  symlinkSync(join(outside, 'secret.txt'), join(t.cwd, 'link-to-secret'))
  symlinkSync(outside, join(t.cwd, 'link-dir'))
  symlinkSync('inside.txt', join(t.cwd, 'link-inside'))
})
afterAll(async () => {
  await t.dispose()
  rmSync(outside, { recursive: true, force: true })
})

const outsideMessage = (path: string, cwd: string) =>
  `Error: ${path} is outside the working directory ${cwd}; the file tools only touch files inside it (config allowOutsideCwd)`

describe('paths resolve against the agent cwd and stay inside it', () => {
  it("resolves relative paths against the agent's cwd, not the process's", async () => {
    expect(process.cwd()).not.toBe(t.cwd)
    expect((await t.run('read', { path: 'inside.txt' })).text).toBe('     1\tfine')
    expect((await t.run('read', { path: join(t.cwd, 'inside.txt') })).text).toBe('     1\tfine')
    expect((await t.run('read', { path: 'sub/../inside.txt' })).text).toBe('     1\tfine')
  })

  it('refuses `..` and absolute paths outside the cwd, for every tool', async () => {
    const rel = `../${outside.split('/').pop()}/secret.txt`
    for (const [name, args] of [
      ['read', { path: rel }],
      ['read', { path: join(outside, 'secret.txt') }],
      ['write', { path: rel, content: 'x' }],
      ['edit', { path: rel, old_string: 'top', new_string: 'bottom' }],
      ['grep', { pattern: 'secret', path: '..' }],
      ['ls', { path: '..' }],
      ['glob', { pattern: '*', path: outside }],
    ] as const) {
      const { text, isError } = await t.run(name, args)
      expect(isError, name).toBe(true)
      expect(text, name).toBe(outsideMessage('path' in args ? args.path : '', t.cwd))
    }
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n')
  })

  it('refuses a path that leaves the cwd through a symlink, even to a file that does not exist yet', async () => {
    const viaFile = await t.run('read', { path: 'link-to-secret' })
    expect(viaFile.isError).toBe(true)
    expect(viaFile.text).toBe(
      `Error: link-to-secret resolves through a symlink to ${join(outside, 'secret.txt')}, outside the working directory ${t.cwd}; the file tools only touch files inside it (config allowOutsideCwd)`,
    )
    const viaDir = await t.run('write', { path: 'link-dir/new/planted.txt', content: 'x' })
    expect(viaDir.isError).toBe(true)
    expect(viaDir.text).toContain(`resolves through a symlink to ${join(outside, 'new/planted.txt')}`)
    expect(existsSync(join(outside, 'new'))).toBe(false)
    expect((await t.run('ls', { path: 'link-dir' })).isError).toBe(true)
    expect((await t.run('read', { path: 'link-inside' })).text).toBe('     1\tfine')
  })

  it('does not follow symlinks out while walking', async () => {
    expect((await t.run('grep', { pattern: 'secret' })).text).toMatch(/^No matches/)
    expect((await t.run('glob', { pattern: '**/*' })).text).toBe('inside.txt')
  })

  it('refuses ~ outside the cwd', async () => {
    const { text } = await t.run('read', { path: '~/anything' })
    expect(text).toBe(outsideMessage('~/anything', t.cwd))
  })
})

describe('allowOutsideCwd', () => {
  it('lets the tools reach outside when configured', async () => {
    const open = await fsKeel({ allowOutsideCwd: true })
    try {
      expect((await open.run('read', { path: join(outside, 'secret.txt') })).text).toBe('     1\ttop secret')
      const written = await open.run('write', { path: join(outside, 'sub/out.txt'), content: 'x\n' })
      expect(written.text).toBe(`Created ${join(outside, 'sub/out.txt')}: 2 bytes, 1 line.`)
      expect((await open.run('grep', { pattern: 'secret', path: outside })).text).toBe(
        `${join(outside, 'secret.txt')}:1: top secret`,
      )
    } finally {
      await open.dispose()
    }
  })
})

describe('non-agent calls', () => {
  it('resolve against process.cwd()', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-fs-process-cwd-'))
    const previous = process.cwd()
    try {
      mkdirSync(join(dir, 'x'))
      writeFileSync(join(dir, 'x', 'f.txt'), 'hello\n')
      process.chdir(dir) // restored below, before another file runs in this worker
      const read = (path: string) =>
        t.keel.ctx.tools.execute({
          callId: 'n1',
          name: 'read',
          arguments: { path },
          signal: new AbortController().signal,
        })
      expect(await read('x/f.txt')).toEqual({ isError: false, content: [{ type: 'text', text: '     1\thello' }] })
      expect((await read(join(t.cwd, 'inside.txt'))).isError).toBe(true)
    } finally {
      process.chdir(previous)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
