import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, test } from 'vitest'
import type { Context } from 'cordis'
import { LoaderFile } from '@cordisjs/loader'
import { ScriptedAdapter } from '@keel/llm'
import { boot, DEFAULT_COMPOSITION, shutdown } from '../src/boot.ts'
import { SHIPPED_COMPOSITION } from '../src/composition.ts'
import { KeelLoader } from '../src/loader.ts'
import { BUILTIN_PLUGINS } from '../src/plugins.ts'

const booted: Context[] = []
afterEach(async () => {
  for (const ctx of booted.splice(0)) await shutdown(ctx)
})
async function start(options: Parameters<typeof boot>[0] = {}): Promise<Context> {
  const ctx = await boot(options)
  booted.push(ctx)
  return ctx
}

/** What a model sees of a booted Keel: the tools with their schemas, and an agent's system prompt. */
function modelView(ctx: Context) {
  const tools = ctx.tools.schemas()
  const agent = ctx.agents.create({ cwd: process.cwd(), model: new ScriptedAdapter({ steps: [] }), persist: false })
  return { tools, system: agent.systemText() }
}

describe('the shipped composition', () => {
  test.each(Object.keys(BUILTIN_PLUGINS))('%s is a named-export plugin the Loader keeps as is', async (name) => {
    const ns = (await BUILTIN_PLUGINS[name]!()) as Record<string, unknown>
    expect('default' in ns).toBe(false)
    expect(typeof ns.apply).toBe('function')
    expect(typeof ns.name).toBe('string')
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(ns)).toBe(ns)
  })

  test('the compiled-in composition is keel.yml, entry by entry', async () => {
    const file = await new LoaderFile(DEFAULT_COMPOSITION, LoaderFile.writable['.yml']).read()
    expect(SHIPPED_COMPOSITION).toEqual(file)
  })

  test('keel.yml through the real Loader loads every plugin, and the file is not rewritten', async () => {
    const before = readFileSync(DEFAULT_COMPOSITION, 'utf8')
    const ctx = await start({ composition: DEFAULT_COMPOSITION, dev: true })
    const loader = ctx.get('loader') as KeelLoader
    const entries = [...loader.entries()]
    expect(entries.map((entry) => entry.options.name)).toEqual([
      ...SHIPPED_COMPOSITION.map((entry) => entry.name),
      '@keel/session/dev',
    ])
    for (const entry of entries) expect(entry.fork, entry.options.name).toBeDefined()
    for (const key of ['sessions', 'projections', 'invariants', 'llm', 'tools', 'agents'])
      expect(ctx.get(key), key).toBeDefined()
    expect(ctx.tools.names()).toEqual(expect.arrayContaining(['bash', 'todo_write']))
    expect(ctx.projections.has('todos')).toBe(true)
    await new Promise((done) => setTimeout(done, 20))
    expect(readFileSync(DEFAULT_COMPOSITION, 'utf8')).toBe(before)
  })

  test('the lean boot (no --config) and the Loader over keel.yml give the same tools, schemas and system prompt', async () => {
    const lean = await start()
    expect(lean.get('loader')).toBeUndefined()
    const loaded = await start({ composition: DEFAULT_COMPOSITION })
    expect(loaded.get('loader')).toBeDefined()
    const a = modelView(lean)
    const b = modelView(loaded)
    expect(a.tools.map((tool) => tool.name)).toEqual(b.tools.map((tool) => tool.name))
    expect(JSON.stringify(a.tools)).toBe(JSON.stringify(b.tools))
    expect(a.system).toBe(b.system)
    // The same services, configured alike.
    for (const key of ['sessions', 'projections', 'llm', 'tools', 'agents', 'sandbox', 'permissions', 'subagents'])
      expect([key, !!lean.get(key)]).toEqual([key, !!loaded.get(key)])
    for (const key of ['agents', 'checkpoints', 'compaction', 'mcp'] as const) {
      const config = (lean.get(key) as { config?: unknown }).config
      expect(config, key).toBeTypeOf('object')
      expect(config, key).toEqual((loaded.get(key) as { config?: unknown }).config)
    }
  })

  test('settings overrides reach the plugin on both boots', async () => {
    const overrides = { todo: { allowParallelInProgress: true } }
    for (const ctx of [await start({ overrides }), await start({ composition: DEFAULT_COMPOSITION, overrides })])
      expect(ctx.tools.get('todo_write')!.description).not.toMatch(/Keep exactly one task in_progress/)
  })

  test('the composition is the default: todo_write runs under the single in-progress policy', async () => {
    const ctx = await start()
    expect(ctx.tools.get('todo_write')!.description).toMatch(/Keep exactly one task in_progress/)
  })
})
