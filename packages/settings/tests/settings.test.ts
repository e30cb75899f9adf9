import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeEach, expect, test } from 'vitest'
import {
  loadInstructions,
  mergeLayers,
  projectDirs,
  projectRoot,
  protectedEntries,
  readSettingsFiles,
} from '../src/index.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-settings-'))
const previousHome = process.env.KEEL_HOME
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
})
let n = 0
let dir: string
beforeEach(() => {
  dir = join(scratch, `t${++n}`)
  mkdirSync(join(dir, 'home'), { recursive: true })
  process.env.KEEL_HOME = join(dir, 'home')
})

test("the project root is the nearest folder with .git, a worktree's .git file included; else the cwd alone", () => {
  const deep = join(dir, 'wt', 'a', 'b')
  mkdirSync(deep, { recursive: true })
  expect(projectRoot(deep)).toBe(deep)
  expect(projectDirs(deep)).toEqual([deep])
  writeFileSync(join(dir, 'wt', '.git'), 'gitdir: /elsewhere\n')
  expect(projectRoot(deep)).toBe(join(dir, 'wt'))
  expect(projectDirs(deep)).toEqual([join(dir, 'wt'), join(dir, 'wt', 'a'), deep])
})

test('the cap never splits a character and names what it cut and what it left out', () => {
  mkdirSync(join(dir, 'p', '.git'), { recursive: true })
  mkdirSync(join(dir, 'p', 'sub'))
  writeFileSync(join(dir, 'p', 'AGENTS.md'), 'é'.repeat(30))
  writeFileSync(join(dir, 'p', 'sub', 'AGENTS.md'), 'second file')
  const result = loadInstructions(join(dir, 'p', 'sub'), 41)
  expect(result.text).toContain(`## ../AGENTS.md\n\n${'é'.repeat(20)}\n`)
  expect(result.text).not.toContain('é'.repeat(21))
  expect(result.text).not.toContain('\uFFFD')
  expect(result.files.map((file) => [file.label, file.cut])).toEqual([
    ['../AGENTS.md', 20],
    ['AGENTS.md', 11],
  ])
  expect(result.text).toContain('cut 20 of 60 bytes of ../AGENTS.md; left out 11 of 11 bytes of AGENTS.md')
  expect(loadInstructions(join(dir, 'p', 'sub')).text).not.toContain('capped')
})

test('a directory named AGENTS.md is no instruction file; CLAUDE.md stands in', () => {
  mkdirSync(join(dir, 'q', 'AGENTS.md'), { recursive: true })
  writeFileSync(join(dir, 'q', 'CLAUDE.md'), 'claude rules')
  expect(loadInstructions(join(dir, 'q')).files.map((file) => file.label)).toEqual(['CLAUDE.md'])
})

test('merging: deeper wins key by key, rule lists add up, each value keeps its source', () => {
  const merged = mergeLayers([
    {
      source: 'user',
      values: { model: 'a/b', permissions: { allow: ['read'], deny: ['bash(rm:*)'] }, todo: { x: 1, y: 2 } },
    },
    { source: 'project', values: { model: 'c/d', permissions: { allow: ['edit(src/a.ts)'] }, todo: { y: 3 } } },
  ])
  expect(merged.values).toEqual({
    model: 'c/d',
    permissions: { allow: ['read', 'edit(src/a.ts)'], deny: ['bash(rm:*)'] },
    todo: { x: 1, y: 3 },
  })
  expect(merged.sources).toEqual({
    model: 'project',
    'permissions.allow': 'user + project',
    'permissions.deny': 'user',
    'todo.x': 'user',
    'todo.y': 'project',
  })
})

test("the user's settings file is read once even when KEEL_HOME sits inside the project", () => {
  mkdirSync(join(dir, 'r', '.git'), { recursive: true })
  process.env.KEEL_HOME = join(dir, 'r', '.keel')
  mkdirSync(process.env.KEEL_HOME)
  writeFileSync(join(process.env.KEEL_HOME, 'settings.json'), '{"model":"a/b"}')
  expect(readSettingsFiles(join(dir, 'r')).map((file) => file.scope)).toEqual(['user'])
})

test("an empty file where .keel is (the sandbox's mount point while a command runs) hides no settings", () => {
  mkdirSync(join(dir, 'r', '.git'), { recursive: true })
  writeFileSync(join(dir, 'r', '.keel'), '')
  writeFileSync(join(process.env.KEEL_HOME!, 'settings.json'), '{"protectedPaths":["package.json"]}')
  expect(readSettingsFiles(join(dir, 'r')).map((file) => file.scope)).toEqual(['user'])
  expect(protectedEntries(join(dir, 'r'))).toContain('package.json')
})
