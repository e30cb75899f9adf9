// Entries in KEEL_HOME that are not sessions, and session files whose header is wrong.
import { execFileSync } from 'node:child_process'
import {
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { MAX_SESSION_BYTES, SessionFileError, sessionPath, type SessionHeader } from '@keel/session'
import { appendTurn, boot, useTempHome } from './helpers.ts'

useTempHome()
const cwd = '/tmp/keel-hostile-project'
let ctx: Context | undefined
afterEach(async () => {
  await ctx?.stop()
  ctx = undefined
})

/** Boots a store that records what `list()` skipped. */
async function bootRecording(): Promise<{ ctx: Context; skipped: string[] }> {
  const booted = await boot()
  const skipped: string[] = []
  booted.on('session/skipped', (path, problem) => {
    skipped.push(`${path}: ${problem}`)
  })
  return { ctx: booted, skipped }
}

function thrown(fn: () => unknown): Error {
  try {
    fn()
  } catch (error) {
    return error as Error
  }
  throw new Error('expected a throw')
}

describe('only regular files of this user are sessions', () => {
  it('skips a FIFO, a symlink to /dev/zero, a symlink to a real session, a directory and a socket, with one warning each; read and open refuse them in one line', async () => {
    const booted = await bootRecording()
    ctx = booted.ctx
    const real = ctx.sessions.create({ cwd, id: 'real' })
    appendTurn(real, 1)
    ctx.sessions.close(real)
    const realPath = sessionPath(cwd, 'real')
    const before = readFileSync(realPath, 'utf8')
    const dir = dirname(realPath)
    execFileSync('mkfifo', [join(dir, 'fifo.jsonl')])
    symlinkSync('/dev/zero', join(dir, 'zero.jsonl'))
    symlinkSync(realPath, join(dir, 'alias.jsonl'))
    symlinkSync(join(dir, 'missing-target'), join(dir, 'dangling.jsonl'))
    mkdirSync(join(dir, 'folder.jsonl'))
    const server = createServer()
    await new Promise<void>((done) => server.listen(join(dir, 'sock.jsonl'), done))
    try {
      const listed = ctx.sessions.list(cwd) // would hang on the FIFO, or fill memory from /dev/zero
      expect(listed.map((s) => s.id)).toEqual(['real'])
      expect(ctx.sessions.list().map((s) => s.id)).toEqual(['real'])
      const problems = booted.skipped.slice(0, 6).sort()
      expect(problems).toEqual([
        `${join(dir, 'alias.jsonl')}: is a symbolic link, not a session file; skipped`,
        `${join(dir, 'dangling.jsonl')}: is a symbolic link, not a session file; skipped`,
        `${join(dir, 'fifo.jsonl')}: is a FIFO, not a session file; skipped`,
        `${join(dir, 'folder.jsonl')}: is a directory, not a session file; skipped`,
        `${join(dir, 'sock.jsonl')}: is a socket, not a session file; skipped`,
        `${join(dir, 'zero.jsonl')}: is a symbolic link, not a session file; skipped`,
      ])
      for (const problem of booted.skipped) expect(problem).not.toContain('\n')

      expect(thrown(() => ctx!.sessions.read('fifo')).message).toBe(
        `${join(dir, 'fifo.jsonl')}: is a FIFO, not a session file`,
      )
      expect(thrown(() => ctx!.sessions.open('fifo'))).toBeInstanceOf(SessionFileError)
      expect(thrown(() => ctx!.sessions.read('zero')).message).toBe(
        `${join(dir, 'zero.jsonl')}: is a symbolic link, not a session file`,
      )
      expect(thrown(() => ctx!.sessions.read('folder')).message).toBe(
        `${join(dir, 'folder.jsonl')}: is a directory, not a session file`,
      )
      expect(thrown(() => ctx!.sessions.backscan('zero', () => 1)).message).toContain('is a symbolic link')
      // A symlinked session is never appended to (nor is its target repaired through it).
      expect(thrown(() => ctx!.sessions.open('alias')).message).toBe(
        `${join(dir, 'alias.jsonl')}: is a symbolic link, not a session file`,
      )
      expect(readFileSync(realPath, 'utf8')).toBe(before)
      expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([])
      expect(existsSync(join(dir, 'alias.jsonl.lock'))).toBe(false)
    } finally {
      server.close()
    }
  })

  it('refuses a file that belongs to another user, and a file too large to load, without reading it', async () => {
    const booted = await bootRecording()
    ctx = booted.ctx
    const session = ctx.sessions.create({ cwd, id: 'theirs' })
    ctx.sessions.close(session)
    const path = sessionPath(cwd, 'theirs')
    if (process.getuid?.() === 0) {
      chownSync(path, 65534, 65534)
      expect(ctx.sessions.list(cwd)).toEqual([])
      expect(booted.skipped).toEqual([`${path}: belongs to another user (uid 65534), not to you (uid 0); skipped`])
      expect(thrown(() => ctx!.sessions.open('theirs')).message).toBe(
        `${path}: belongs to another user (uid 65534), not to you (uid 0)`,
      )
      chownSync(path, 0, 0)
    }
    truncateSync(path, MAX_SESSION_BYTES + 1) // sparse: costs no disk
    expect(thrown(() => ctx!.sessions.read('theirs')).message).toBe(
      `${path}: is ${MAX_SESSION_BYTES + 1} bytes, more than the ${MAX_SESSION_BYTES} a session log may hold to be loaded`,
    )
    expect(statSync(path).size).toBe(MAX_SESSION_BYTES + 1)
  })

  it('a lock file that is a symlink or a FIFO is not followed or read: it is stale and replaced', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'locky' })
    ctx.sessions.close(session)
    const path = sessionPath(cwd, 'locky')
    symlinkSync('/dev/zero', path + '.lock')
    ctx.sessions.close(ctx.sessions.open('locky').session)
    execFileSync('mkfifo', [path + '.lock'])
    ctx.sessions.close(ctx.sessions.open('locky').session)
    expect(existsSync(path + '.lock')).toBe(false)
  })
})

describe('headers', () => {
  const cases: [string, (header: Record<string, unknown>) => void, string][] = [
    [
      'no cwd',
      (h) => {
        delete h.cwd
      },
      'the header has no valid cwd (an absolute path)',
    ],
    [
      'a relative cwd',
      (h) => {
        h.cwd = 'rel/dir'
      },
      'the header has no valid cwd (an absolute path)',
    ],
    [
      'a numeric cwd',
      (h) => {
        h.cwd = 42
      },
      'the header has no valid cwd (an absolute path)',
    ],
    [
      'a string createdAt',
      (h) => {
        h.createdAt = 'yesterday'
      },
      'the header has no valid createdAt time',
    ],
    [
      'a string version',
      (h) => {
        h.version = '1'
      },
      'the header has no valid format version',
    ],
    [
      'a parent without callId',
      (h) => {
        h.parent = { sessionId: 'p' }
      },
      'the header has an invalid parent (needs a sessionId and a callId)',
    ],
    [
      'a parent that is a string',
      (h) => {
        h.parent = 'p'
      },
      'the header has an invalid parent (needs a sessionId and a callId)',
    ],
    [
      'an array',
      (h) => {
        for (const key of Object.keys(h)) delete h[key]
        Object.assign(h, { 0: 1 })
      },
      'the first line is not a Keel session header (type is not "session")',
    ],
    [
      'another id',
      (h) => {
        h.id = 'someone-else'
      },
      'the header names session someone-else, not victim as the file name says',
    ],
  ]

  it.each(cases)(
    'a header with %s is one line naming the file, from read, open and list',
    async (_, change, problem) => {
      const booted = await bootRecording()
      ctx = booted.ctx
      const session = ctx.sessions.create({ cwd, id: 'victim' })
      appendTurn(session, 1)
      ctx.sessions.close(session)
      const path = sessionPath(cwd, 'victim')
      const [first, ...rest] = readFileSync(path, 'utf8').split('\n')
      const header = JSON.parse(first!) as SessionHeader & Record<string, unknown>
      change(header)
      writeFileSync(path, [JSON.stringify(header), ...rest].join('\n'))
      const expected = `${path}:1: ${problem}`
      expect(thrown(() => ctx!.sessions.read('victim')).message).toBe(expected)
      expect(thrown(() => ctx!.sessions.open('victim'))).toBeInstanceOf(SessionFileError)
      expect(existsSync(path + '.lock')).toBe(false)
      expect(ctx.sessions.list()).toEqual([]) // never shown, and never under another id
      expect(booted.skipped).toEqual([`${path}: ${problem}; skipped`])
    },
  )
})
