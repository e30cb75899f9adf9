// settingsSnapshot: the settings files and trust of a folder are read once and kept while nothing they depend on
// changed; a person's edit to any of them (settings, trust record, .mcp.json, a command file, a new .git) counts at
// the next use, and a use with nothing changed reads no file.
import * as fs from 'node:fs'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeEach, expect, test, vi } from 'vitest'
import { settingsSnapshot, trustFolder } from '../src/index.ts'

vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>()
  return {
    ...real,
    readFileSync: vi.fn(real.readFileSync),
    openSync: vi.fn(real.openSync),
    readdirSync: vi.fn(real.readdirSync),
  }
})
const reads = () =>
  vi.mocked(fs.readFileSync).mock.calls.length +
  vi.mocked(fs.openSync).mock.calls.length +
  vi.mocked(fs.readdirSync).mock.calls.length

const scratch = mkdtempSync(join(tmpdir(), 'keel-snapshot-'))
const previousHome = process.env.KEEL_HOME
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
})

let n = 0
let repo: string
let home: string
beforeEach(() => {
  const dir = join(scratch, `t${++n}`)
  repo = join(dir, 'repo')
  home = join(dir, 'home')
  mkdirSync(join(repo, '.git'), { recursive: true })
  mkdirSync(join(repo, '.keel', 'commands'), { recursive: true })
  mkdirSync(home)
  process.env.KEEL_HOME = home
})

/**
 * Moves every file's mtime 10 s back: an answer read right after a write is not kept (the write may be followed by
 * another within the same timestamp tick), and these tests check what is kept.
 */
function age(dir = join(scratch, `t${n}`)): void {
  const past = new Date(Date.now() - 10_000)
  for (const name of readdirSync(dir, { recursive: true }) as string[]) utimesSync(join(dir, name), past, past)
  utimesSync(dir, past, past)
}

const write = (path: string, data: unknown) =>
  writeFileSync(path, typeof data === 'string' ? data : JSON.stringify(data))

test('a second use with nothing changed is the same answer and reads no file', () => {
  write(join(home, 'settings.json'), { permissions: { allow: ['Bash(ls)'] } })
  write(join(repo, '.keel', 'settings.json'), { permissions: { deny: ['Bash(rm *)'] } })
  write(join(repo, '.keel', 'commands', 'go.md'), 'go')
  write(join(repo, '.mcp.json'), { mcpServers: {} })
  trustFolder(repo)
  age()
  const filling = reads()
  const first = settingsSnapshot(repo)
  // The spy sees this module's reads (a cached copy of it would make the check below pass for nothing).
  expect(reads()).toBeGreaterThan(filling)
  expect(first.trust.trusted).toBe(true)
  expect(first.files.map((file) => file.scope)).toEqual(['user', 'project'])
  const before = reads()
  expect(settingsSnapshot(repo)).toBe(first)
  expect(settingsSnapshot(repo)).toBe(first)
  expect(reads() - before).toBe(0)
})

test('an edit to a settings file counts at the next use, even one of the same size', () => {
  const path = join(repo, '.keel', 'settings.json')
  write(path, { permissions: { deny: ['Bash(aa *)'] } })
  age()
  expect(settingsSnapshot(repo).files[0]!.data).toEqual({ permissions: { deny: ['Bash(aa *)'] } })
  write(path, { permissions: { deny: ['Bash(bb *)'] } })
  // Even one that keeps its old mtime: the inode's change time moves.
  const { mtime } = statSync(join(repo, '.git'))
  utimesSync(path, mtime, mtime)
  expect(settingsSnapshot(repo).files[0]!.data).toEqual({ permissions: { deny: ['Bash(bb *)'] } })
  write(join(repo, '.keel', 'settings.local.json'), { mode: 'ask' })
  expect(settingsSnapshot(repo).files.map((file) => file.path)).toEqual([
    path,
    join(repo, '.keel', 'settings.local.json'),
  ])
  write(join(home, 'settings.json'), { mode: 'read-only' })
  expect(settingsSnapshot(repo).files[0]!.data).toEqual({ mode: 'read-only' })
})

test('a bad file is kept as the error, and its repair counts at the next use', () => {
  const path = join(repo, '.keel', 'settings.json')
  write(path, '{ not json')
  age()
  expect(settingsSnapshot(repo).error?.message).toMatch(/not valid JSON/)
  expect(settingsSnapshot(repo).files).toEqual([])
  write(path, { mode: 'ask' })
  expect(settingsSnapshot(repo).error).toBeUndefined()
})

test('trust given (in this process or another) and trust lost by an edit count at the next use', () => {
  write(join(repo, '.keel', 'settings.json'), { permissions: { allow: ['Bash(make)'] } })
  write(join(repo, '.keel', 'commands', 'go.md'), 'one')
  age()
  expect(settingsSnapshot(repo).trust.trusted).toBe(false)
  trustFolder(repo)
  expect(settingsSnapshot(repo).trust.trusted).toBe(true)
  age()
  expect(settingsSnapshot(repo).trust.trusted).toBe(true)
  // A command file edited in place (its folder's mtime does not move): the hash changes, trust asks again.
  write(join(repo, '.keel', 'commands', 'go.md'), 'two')
  expect(settingsSnapshot(repo).trust.trusted).toBe(false)
  trustFolder(repo)
  age()
  expect(settingsSnapshot(repo).trust.trusted).toBe(true)
  write(join(repo, '.mcp.json'), { mcpServers: {} })
  expect(settingsSnapshot(repo).trust.trusted).toBe(false)
})

test('a .git appearing below the root moves the project root, and so the files read', () => {
  const sub = join(repo, 'sub')
  mkdirSync(join(sub, '.keel'), { recursive: true })
  write(join(repo, '.keel', 'settings.json'), { mode: 'ask' })
  age()
  expect(settingsSnapshot(sub).files.map((file) => file.path)).toEqual([join(repo, '.keel', 'settings.json')])
  mkdirSync(join(sub, '.git'))
  expect(settingsSnapshot(sub).files).toEqual([])
  expect(settingsSnapshot(sub).trust.folder).toBe(sub)
})

test('another KEEL_HOME counts at the next use', () => {
  write(join(repo, '.keel', 'settings.json'), { permissions: { allow: ['Bash(make)'] } })
  age()
  expect(settingsSnapshot(repo).trust.trusted).toBe(false)
  const other = join(scratch, 'other-home')
  mkdirSync(other)
  write(join(other, 'settings.json'), { mode: 'ask' })
  process.env.KEEL_HOME = other
  expect(settingsSnapshot(repo).files[0]!.path).toBe(join(other, 'settings.json'))
  // (--trust is in the key too; not tried here: it lasts for the process, which other test files share.)
})
