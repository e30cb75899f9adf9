// projectRules runs for every permission check: it is read once per folder and kept while its settings files and
// trust are unchanged (@keel/settings' settingsSnapshot), so a person's edit counts at the next check and repeated
// checks read no file.
import * as fs from 'node:fs'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { trustFolder } from '@keel/settings'
import { afterAll, beforeEach, expect, test, vi } from 'vitest'
import { projectRules } from '../src/project.ts'

vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>()
  return { ...real, readFileSync: vi.fn(real.readFileSync), openSync: vi.fn(real.openSync) }
})
const reads = () => vi.mocked(fs.readFileSync).mock.calls.length + vi.mocked(fs.openSync).mock.calls.length

const scratch = mkdtempSync(join(tmpdir(), 'keel-project-rules-'))
const previousHome = process.env.KEEL_HOME
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
})

let repo: string
beforeEach(() => {
  const dir = mkdtempSync(join(scratch, 't-'))
  repo = join(dir, 'repo')
  mkdirSync(join(repo, '.git'), { recursive: true })
  mkdirSync(join(repo, '.keel'))
  mkdirSync(join(dir, 'home'))
  process.env.KEEL_HOME = join(dir, 'home')
})

/** Moves every mtime 10 s back: an answer read right after a write is not kept (settings' snapshot.ts). */
function age(): void {
  const dir = join(repo, '..')
  const past = new Date(Date.now() - 10_000)
  for (const name of readdirSync(dir, { recursive: true }) as string[]) utimesSync(join(dir, name), past, past)
}

const settings = (permissions: unknown) =>
  writeFileSync(join(repo, '.keel', 'settings.json'), JSON.stringify({ permissions }))
const patterns = (rules: { allow: { text: string }[]; deny: { text: string }[] }) => ({
  allow: rules.allow.map((rule) => rule.text),
  deny: rules.deny.map((rule) => rule.text),
})

test('repeated checks read no file and give the same rules', () => {
  settings({ allow: ['Bash(make)'], deny: ['Bash(rm *)'] })
  trustFolder(repo)
  age()
  const filling = reads()
  const first = projectRules(repo)
  // The spy sees the settings module's reads (a cached copy of it would make the check below pass for nothing).
  expect(reads()).toBeGreaterThan(filling)
  expect(patterns(first)).toEqual({ allow: ['Bash(make)'], deny: ['Bash(rm *)'] })
  const before = reads()
  for (let i = 0; i < 5; i++) expect(projectRules(repo)).toBe(first)
  expect(reads() - before).toBe(0)
})

test("an edit to the project's rules counts at the next check; an untrusted edit keeps only the deny rules", () => {
  settings({ allow: ['Bash(make)'] })
  trustFolder(repo)
  age()
  expect(patterns(projectRules(repo))).toEqual({ allow: ['Bash(make)'], deny: [] })
  // The person adds a deny rule: the folder's trust no longer covers the file, so its allow rules stop too.
  settings({ allow: ['Bash(make)'], deny: ['Bash(curl *)'] })
  expect(patterns(projectRules(repo))).toEqual({ allow: [], deny: ['Bash(curl *)'] })
  trustFolder(repo)
  expect(patterns(projectRules(repo))).toEqual({ allow: ['Bash(make)'], deny: ['Bash(curl *)'] })
})
