import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as todo from '@keel/todo'
import { boot, KeelLoader, shutdown } from '@keel/cli'
import { describeTodoWrite } from '@keel/todo'
import type { Context } from 'cordis'

let ctx: Context | undefined
afterEach(async () => {
  if (ctx) await shutdown(ctx)
  ctx = undefined
})

function composition(todoConfig: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-loader-'))
  const path = join(dir, 'keel.yml')
  const todoEntry = `- id: todo\n  name: '@keel/todo'\n${todoConfig === undefined ? '' : `  config:\n    allowParallelInProgress: ${todoConfig}\n`}`
  writeFileSync(
    path,
    `- id: session\n  name: '@keel/session'\n- id: llm\n  name: '@keel/llm'\n- id: tools\n  name: '@keel/tools'\n- id: agent\n  name: '@keel/agent'\n${todoEntry}`,
  )
  return path
}

describe('@keel/todo through the real cordis Loader', () => {
  test('the module is a named-export plugin that survives unwrapExports', () => {
    expect('default' in todo).toBe(false)
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(todo)).toBe(todo)
    expect(typeof todo.apply).toBe('function')
    expect(todo.inject).toEqual(['tools'])
  })

  test.each([
    ['true', true],
    ['false', false],
    [undefined, false],
  ])('allowParallelInProgress: %s loads with policy %s (and the file is never rewritten)', async (value, parallel) => {
    const path = composition(value)
    const before = readFileSync(path, 'utf8')
    ctx = await boot({ composition: path })
    const tool = ctx.tools.get('todo_write')!
    expect(tool.description).toBe(describeTodoWrite({ allowParallelInProgress: parallel }))
    expect(ctx.projections.has('todos')).toBe(true)
    await new Promise((done) => setTimeout(done, 20))
    expect(readFileSync(path, 'utf8')).toBe(before)
  })

  test('a non-boolean value is a clear load error naming the key', async () => {
    const path = composition('"yes"')
    await expect(boot({ composition: path })).rejects.toThrow(
      /allowParallelInProgress.*boolean|boolean.*allowParallelInProgress/,
    )
  })
})
