// While a sandboxed command runs, or a spare sandbox waits for a turn's next one, the sandbox keeps empty files and
// folders where missing protected paths are (`.bashrc`, `.mcp.json`, `.vscode`…: its mount points). They are not the
// person's files: glob and ls never list them, read says they do not exist; a real empty file beside them is listed.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { points } from '@keel/sandbox/mount-points'
import { fsKeel, type FsKeel } from './support.ts'

let t: FsKeel
beforeAll(async () => {
  t = await fsKeel({})
  t.put('src/main.ts', 'x\n')
  t.put('empty.txt', '')
  t.put('.bashrc', '')
  t.put('.mcp.json', '')
  mkdirSync(join(t.cwd, '.vscode'))
  for (const name of ['.bashrc', '.mcp.json', '.vscode']) points.add(join(t.cwd, name))
})
afterAll(async () => {
  points.clear()
  await t.dispose()
})

test('read takes an empty mount point for the missing file it stands for; a real empty file reads as empty', async () => {
  expect((await t.run('read', { path: '.mcp.json' })).text).toContain('.mcp.json does not exist')
  expect((await t.run('read', { path: 'empty.txt' })).text).toBe('empty.txt is empty.')
})

test('glob and ls leave out the sandbox mount points', async () => {
  expect((await t.run('glob', { pattern: '**/*' })).text).toBe('empty.txt\nsrc/main.ts')
  expect((await t.run('ls', {})).text).toBe('src/\nempty.txt')
  points.clear()
  expect((await t.run('glob', { pattern: '.*' })).text).toBe('.bashrc\n.mcp.json')
})
