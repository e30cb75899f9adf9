import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, test } from 'vitest'
import type { Context } from 'cordis'
import { boot, DEFAULT_COMPOSITION, KeelLoader, shutdown } from '../src/boot.ts'
import { BUILTIN_PLUGINS } from '../src/plugins.ts'

let ctx: Context | undefined
afterEach(async () => {
  if (ctx) await shutdown(ctx)
  ctx = undefined
})

describe('the shipped composition', () => {
  test.each(Object.keys(BUILTIN_PLUGINS))('%s is a named-export plugin the Loader keeps as is', async (name) => {
    const ns = (await BUILTIN_PLUGINS[name]!()) as Record<string, unknown>
    expect('default' in ns).toBe(false)
    expect(typeof ns.apply).toBe('function')
    expect(typeof ns.name).toBe('string')
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(ns)).toBe(ns)
  })

  test('every plugin loads through the real Loader, and the file is not rewritten', async () => {
    const before = readFileSync(DEFAULT_COMPOSITION, 'utf8')
    ctx = await boot({ dev: true })
    const loader = ctx.get('loader') as KeelLoader
    const entries = [...loader.entries()]
    const names = before.match(/name: '([^']+)'/g)!.map((line) => line.slice(7, -1))
    expect(entries.map((entry) => entry.options.name)).toEqual([...names, '@keel/session/dev'])
    for (const entry of entries) expect(entry.fork, entry.options.name).toBeDefined()
    for (const key of ['sessions', 'projections', 'invariants', 'llm', 'tools', 'agents'])
      expect(ctx.get(key), key).toBeDefined()
    expect(ctx.tools.names()).toEqual(expect.arrayContaining(['bash', 'todo_write']))
    expect(ctx.projections.has('todos')).toBe(true)
    await new Promise((done) => setTimeout(done, 20))
    expect(readFileSync(DEFAULT_COMPOSITION, 'utf8')).toBe(before)
  })

  test('the composition is the default: todo_write runs under the single in-progress policy', async () => {
    ctx = await boot()
    expect(ctx.tools.get('todo_write')!.description).toMatch(/Keep exactly one task in_progress/)
  })
})
