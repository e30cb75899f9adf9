// The trust gate and the protected-path list as functions: what an untrusted project file keeps, what changes ask
// again, and which paths are protected. The CLI tests (packages/cli/tests/trust.test.ts) run the same through keel.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeEach, expect, test } from 'vitest'
import {
  gateSettings,
  loadInstructions,
  protectedMatch,
  protectedTargets,
  readSettingsFiles,
  trustFolder,
  TRUSTED_PATHS,
  trustState,
} from '../src/index.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-trust-unit-'))
const previousHome = process.env.KEEL_HOME
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
})
let n = 0
let repo: string
beforeEach(() => {
  const dir = join(scratch, `t${++n}`)
  repo = join(dir, 'repo')
  mkdirSync(join(repo, '.git'), { recursive: true })
  mkdirSync(join(repo, '.keel'))
  mkdirSync(join(dir, 'home'))
  process.env.KEEL_HOME = join(dir, 'home')
})

test('an untrusted project file keeps only what narrows; the user file passes whole', () => {
  writeFileSync(join(process.env.KEEL_HOME!, 'settings.json'), JSON.stringify({ mode: 'yolo', baseUrl: 'http://me' }))
  writeFileSync(
    join(repo, '.keel', 'settings.json'),
    JSON.stringify({
      mode: 'ask',
      model: 'deepseek/deepseek-reasoner',
      permissions: { allow: ['bash'], deny: ['bash(rm:*)'] },
      sandbox: { level: 'off', allowedDomains: ['x.org'] },
      protectedPaths: ['package.json'],
      todo: { allowParallelInProgress: true },
    }),
  )
  const files = readSettingsFiles(repo)
  const { files: kept, held } = gateSettings(files, trustState(repo), 'deepseek/deepseek-chat')
  expect(kept[0]!.data).toEqual({ mode: 'yolo', baseUrl: 'http://me' })
  expect(kept[1]!.data).toEqual({
    mode: 'ask',
    model: 'deepseek/deepseek-reasoner',
    permissions: { deny: ['bash(rm:*)'] },
    protectedPaths: ['package.json'],
  })
  expect(held.map((entry) => entry.key)).toEqual([
    'permissions.allow',
    'sandbox.allowedDomains',
    'sandbox.level',
    'todo',
  ])
  for (const mode of ['auto', 'yolo']) {
    writeFileSync(join(repo, '.keel', 'settings.json'), JSON.stringify({ mode, model: 'anthropic/claude' }))
    const again = gateSettings(readSettingsFiles(repo), trustState(repo), 'deepseek/deepseek-chat')
    expect(again.held.map((entry) => entry.key)).toEqual(['mode', 'model'])
  }
})

test('trust covers the exact bytes: a change, a new .mcp.json or a subfolder file of its own asks again', () => {
  writeFileSync(join(repo, '.keel', 'settings.json'), '{"mode":"yolo"}')
  expect(trustState(repo).trusted).toBe(false)
  trustFolder(repo)
  expect(trustState(repo).trusted).toBe(true)
  mkdirSync(join(repo, 'sub'))
  expect(trustState(join(repo, 'sub')).trusted).toBe(true)
  mkdirSync(join(repo, 'sub', '.keel'))
  writeFileSync(join(repo, 'sub', '.keel', 'settings.json'), '{}')
  expect(trustState(join(repo, 'sub')).trusted).toBe(false)
  writeFileSync(join(repo, '.mcp.json'), '{}')
  expect(trustState(repo).trusted).toBe(false)
  trustFolder(repo)
  writeFileSync(join(repo, '.keel', 'settings.json'), '{"mode":"yolo" }')
  expect(trustState(repo).trusted).toBe(false)
})

test("an empty .mcp.json or commands folder (the sandbox's mount points while a command runs) keeps trust", () => {
  writeFileSync(join(repo, '.keel', 'settings.json'), '{"mode":"yolo"}')
  trustFolder(repo)
  writeFileSync(join(repo, '.mcp.json'), '')
  mkdirSync(join(repo, '.keel', 'commands'))
  expect(trustState(repo).trusted).toBe(true)
  writeFileSync(join(repo, '.mcp.json'), '{}')
  expect(trustState(repo).trusted).toBe(false)
})

test('every path of TRUSTED_PATHS is in the hash: a command file added, changed or linked asks again', () => {
  trustFolder(repo)
  for (const entry of TRUSTED_PATHS) {
    const path = join(repo, entry.path)
    const file = entry.path.endsWith('.json') ? path : join(path, 'sub', 'x.md')
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, 'one')
    const state = trustState(repo)
    expect(state.trusted, entry.path).toBe(false)
    expect(state.files).toContain(path)
    expect(gateSettings([], state, '').held).toContainEqual({ file: path, key: entry.holds })
    trustFolder(repo)
    expect(trustState(repo).trusted, entry.path).toBe(true)
    writeFileSync(file, 'two')
    expect(trustState(repo).trusted, entry.path).toBe(false)
    trustFolder(repo)
    if (file !== path) {
      symlinkSync('/etc/hostname', join(path, 'link.md'))
      expect(trustState(repo).trusted, entry.path).toBe(false)
      trustFolder(repo)
    }
  }
})

test('protected paths match at any depth below the root, after links too; targets come from the given cwd', () => {
  for (const path of [
    '.keel/settings.json',
    'a/b/.keel/x',
    '.mcp.json',
    '.git/hooks/pre-commit',
    '.git/config',
    'x/.vscode/tasks.json',
  ])
    expect(protectedMatch(join(repo, path), repo), path).toBeDefined()
  for (const path of ['src/keel.ts', '.git/objects/ab/cd', '.git/index', 'README.md', 'my.keel/x'])
    expect(protectedMatch(join(repo, path), repo), path).toBeUndefined()
  expect(protectedMatch(join(process.env.KEEL_HOME!, 'settings.json'), repo)).toBe(process.env.KEEL_HOME)
  const { deny, undo } = protectedTargets(repo)
  expect(deny).toContain(join(repo, '.keel'))
  expect(deny).toContain(join(repo, '.git', 'hooks'))
  expect(undo).toEqual([join(repo, '.git', 'commondir')])
})

test('an instruction file linking out of the project is not read; a huge one is read only up to the cap', () => {
  const outside = join(scratch, `secret-${n}.txt`)
  writeFileSync(outside, 'OUTSIDE-SECRET')
  symlinkSync(outside, join(repo, 'AGENTS.md'))
  expect(loadInstructions(repo).text).not.toContain('OUTSIDE-SECRET')
  rmSync(join(repo, 'AGENTS.md'))
  writeFileSync(join(repo, 'AGENTS.md'), 'x'.repeat(5 * 1024 * 1024))
  const big = loadInstructions(repo)
  expect(big.files[0]).toMatchObject({ bytes: 5 * 1024 * 1024, cut: 5 * 1024 * 1024 - 32 * 1024 })
})
