// Only regular files are read or written. A FIFO, a socket or a device inside the cwd is refused by name when it is
// named, and skipped when a walk meets it; nothing ever blocks on a FIFO or reads a device forever.
import { execFileSync } from 'node:child_process'
import { lstatSync, symlinkSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fsKeel, SEARCH_WAYS, type FsKeel } from './support.ts'

describe.each(SEARCH_WAYS)('%s', (_, way) => {
  let t: FsKeel
  let server: Server
  beforeAll(async () => {
    t = await fsKeel(way)
    t.put('plain.txt', 'needle\n')
    execFileSync('mkfifo', [join(t.cwd, 'pipe')])
    t.put('sub/keep.txt', 'needle\n')
    execFileSync('mkfifo', [join(t.cwd, 'sub/pipe.txt')])
    server = createServer()
    await new Promise<void>((done) => server.listen(join(t.cwd, 'sock'), done))
  })
  afterAll(async () => {
    server.close()
    await t.dispose()
  })

  // Each of these hung for good before (a FIFO opened for reading or writing blocks until the other end appears).
  const timeout = 20_000

  describe('named special files are refused by name', () => {
    it.each([
      ['pipe', 'a FIFO (named pipe)'],
      ['sub/pipe.txt', 'a FIFO (named pipe)'],
      ['sock', 'a socket'],
    ])(
      '%s',
      async (path, kind) => {
        for (const [name, args, verb] of [
          ['read', { path }, 'reads'],
          ['grep', { pattern: 'x', path }, 'reads'],
          ['edit', { path, old_string: 'a', new_string: 'b' }, 'reads'],
          ['write', { path, content: 'x' }, 'writes'],
        ] as const) {
          const result = await t.run(name, args)
          expect(result, name).toEqual({
            isError: true,
            text: `Error: ${path} is ${kind}; ${name} only ${verb} regular files`,
          })
        }
      },
      timeout,
    )

    it(
      'a link to a FIFO is refused the same way',
      async () => {
        symlinkSync('pipe', join(t.cwd, 'pipe-link'))
        expect(await t.run('read', { path: 'pipe-link' })).toEqual({
          isError: true,
          text: 'Error: pipe-link is a FIFO (named pipe); read only reads regular files',
        })
        expect(await t.run('write', { path: 'pipe-link', content: 'x' })).toEqual({
          isError: true,
          text: 'Error: pipe-link is a FIFO (named pipe); write only writes regular files',
        })
      },
      timeout,
    )
  })

  describe('a special file on the way to a path', () => {
    it(
      'is no folder: nothing blocks, and the error says what is wrong',
      async () => {
        expect(await t.run('write', { path: 'pipe/x.txt', content: 'x' })).toEqual({
          isError: true,
          text: 'Error: pipe/x.txt: pipe is not a directory',
        })
        expect(await t.run('read', { path: 'pipe/x.txt' })).toEqual({
          isError: true,
          text: 'Error: pipe/x.txt does not exist',
        })
        expect(await t.run('ls', { path: 'pipe' })).toEqual({
          isError: true,
          text: 'Error: pipe is a FIFO (named pipe), not a directory',
        })
        expect(await t.run('glob', { pattern: '*', path: 'sock' })).toEqual({
          isError: true,
          text: 'Error: sock is a socket, not a directory',
        })
      },
      timeout,
    )
  })

  describe('walks skip special files', () => {
    it(
      'grep and glob pass over FIFOs and sockets, even when the glob names one',
      async () => {
        expect((await t.run('grep', { pattern: 'needle' })).text).toBe('plain.txt:1: needle\nsub/keep.txt:1: needle')
        expect((await t.run('grep', { pattern: 'needle', glob: 'pipe' })).text).toBe(
          'No matches for /needle/ in . (0 files searched).',
        )
        expect((await t.run('grep', { pattern: 'needle', glob: 'sub/*.txt' })).text).toBe('sub/keep.txt:1: needle')
        expect((await t.run('glob', { pattern: '**/*' })).text).toBe('plain.txt\nsub/keep.txt')
      },
      timeout,
    )
  })

  describe('.gitignore files are read with the same care', () => {
    it(
      'a FIFO, a link to /dev/zero or a link outside as .gitignore is passed over, not read',
      async () => {
        const repo = await fsKeel({ ...way, allowOutsideCwd: true })
        try {
          repo.put('a.txt', 'needle\n')
          repo.put('sub/b.txt', 'needle\n')
          repo.put('deeper/c.txt', 'needle\n')
          execFileSync('mkfifo', [join(repo.cwd, '.gitignore')])
          symlinkSync('/dev/zero', join(repo.cwd, 'sub/.gitignore'))
          symlinkSync('/etc/hostname', join(repo.cwd, 'deeper/.gitignore'))
          expect((await repo.run('grep', { pattern: 'needle' })).text).toBe(
            'a.txt:1: needle\ndeeper/c.txt:1: needle\nsub/b.txt:1: needle',
          )
          expect((await repo.run('glob', { pattern: '**/*.txt' })).text).toBe('a.txt\ndeeper/c.txt\nsub/b.txt')
          expect((await repo.run('ls', { path: 'sub' })).text).toBe('.gitignore -> /dev/zero\nb.txt')
        } finally {
          await repo.dispose()
        }
      },
      timeout,
    )
  })

  describe('devices', () => {
    it(
      'refuses a character device by name, directly or through a link (allowOutsideCwd, so only the kind stops it)',
      async () => {
        const open = await fsKeel({ ...way, allowOutsideCwd: true })
        try {
          symlinkSync('/dev/zero', join(open.cwd, 'zero'))
          for (const path of ['/dev/zero', 'zero', '/dev/null']) {
            const display = path === 'zero' ? 'zero' : path
            expect(await open.run('read', { path }), path).toEqual({
              isError: true,
              text: `Error: ${display} is a character device; read only reads regular files`,
            })
            expect(await open.run('grep', { pattern: 'x', path }), path).toEqual({
              isError: true,
              text: `Error: ${display} is a character device; grep only reads regular files`,
            })
            expect(await open.run('edit', { path, old_string: 'a', new_string: 'b' }), path).toEqual({
              isError: true,
              text: `Error: ${display} is a character device; edit only reads regular files`,
            })
          }
          expect(await open.run('write', { path: '/dev/null', content: 'x' })).toEqual({
            isError: true,
            text: 'Error: /dev/null is a character device; write only writes regular files',
          })
          expect(await open.run('write', { path: 'zero', content: 'x' })).toEqual({
            isError: true,
            text: 'Error: zero is a character device; write only writes regular files',
          })
          expect(lstatSync(join(open.cwd, 'zero')).isSymbolicLink()).toBe(true)
        } finally {
          await open.dispose()
        }
      },
      timeout,
    )
  })
})
