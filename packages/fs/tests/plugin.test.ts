import { readFileSync } from 'node:fs'
import { Context } from 'cordis'
import { describe, expect, test } from 'vitest'
import { DEFAULT_COMPOSITION, KeelLoader } from '@keel/cli'
import * as fsPlugin from '@keel/fs'
import * as toolsPlugin from '@keel/tools'
import { waitFor } from '../../../test-support/harness.ts'
import { useBoot } from '../../../test-support/boot.ts'

const FS_TOOLS = ['read', 'write', 'edit', 'grep', 'glob', 'ls']
/** A whole config: the schema's defaults plus what a test sets. */
const config = (partial: Partial<fsPlugin.Config> = {}) => fsPlugin.Config(partial as fsPlugin.Config)

describe('plugin shape', () => {
  test("named exports only: the Loader's unwrapExports keeps the namespace", () => {
    expect('default' in fsPlugin).toBe(false)
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(fsPlugin)).toBe(fsPlugin)
    expect(fsPlugin.name).toBe('keel-fs')
    expect(fsPlugin.inject).toEqual(['tools'])
    expect([...fsPlugin.FS_TOOLS]).toEqual(FS_TOOLS)
    expect(fsPlugin.Config({} as fsPlugin.Config)).toMatchObject({
      allowOutsideCwd: false,
      maxReadLines: 2000,
      maxLineChars: 2000,
      maxGrepMatches: 200,
    })
  })

  test('HMR-safe: disposing the plugin removes all six tools; reloading restores them', async () => {
    const ctx = new Context()
    ctx.plugin(toolsPlugin)
    await ctx.start()
    await waitFor(() => ctx.get('tools'))
    const fork = ctx.plugin(fsPlugin, config())
    await waitFor(() => FS_TOOLS.every((name) => ctx.tools.get(name)))
    fork.dispose()
    for (const name of FS_TOOLS) expect(ctx.tools.get(name), name).toBeUndefined()
    ctx.plugin(fsPlugin, config({ maxReadLines: 7 }))
    await waitFor(() => FS_TOOLS.every((name) => ctx.tools.get(name)))
    expect(ctx.tools.get('read')!.description).toContain('Reads 7 lines')
    await ctx.stop().catch(() => {})
  })
})

describe('what UIs and the loop are told', () => {
  const ctxTools = async () => {
    const ctx = new Context()
    ctx.plugin(toolsPlugin)
    ctx.plugin(fsPlugin, config())
    await ctx.start()
    await waitFor(() => ctx.get('tools') && ctx.tools.get('ls'))
    return ctx
  }

  test('presentCall: kind, a short title and locations', async () => {
    const ctx = await ctxTools()
    expect(ctx.tools.present('read', { path: 'src/a.ts' })).toEqual({
      title: 'Read src/a.ts',
      kind: 'read',
      rawInput: { path: 'src/a.ts' },
      locations: [{ path: 'src/a.ts' }],
    })
    expect(ctx.tools.present('read', { path: 'src/a.ts', offset: 40, limit: 10 })).toMatchObject({
      title: 'Read src/a.ts (from line 40, 10 lines)',
      locations: [{ path: 'src/a.ts', line: 40 }],
    })
    expect(ctx.tools.present('write', { path: 'b.md', content: 'x' })).toMatchObject({
      title: 'Write b.md',
      kind: 'edit',
      locations: [{ path: 'b.md' }],
    })
    expect(ctx.tools.present('edit', { path: 'c.ts', old_string: 'a', new_string: 'b' })).toMatchObject({
      title: 'Edit c.ts',
      kind: 'edit',
      locations: [{ path: 'c.ts' }],
    })
    expect(ctx.tools.present('grep', { pattern: 'TODO\\s+fix', path: 'src', glob: '*.ts' })).toMatchObject({
      title: 'Grep /TODO\\s+fix/ in src (*.ts)',
      kind: 'read',
      locations: [{ path: 'src' }],
    })
    expect(ctx.tools.present('ls', {})).toMatchObject({ title: 'List .', kind: 'read', locations: [{ path: '.' }] })
    expect(ctx.tools.present('glob', { pattern: '**/*.ts' })).toMatchObject({
      title: 'Glob **/*.ts',
      kind: 'read',
      locations: [],
    })
    expect(ctx.tools.present('grep', { pattern: 'x'.repeat(200) }).title.length).toBeLessThan(70)
    await ctx.stop().catch(() => {})
  })

  test('reading tools may overlap; writing tools run alone', async () => {
    const ctx = await ctxTools()
    expect(FS_TOOLS.filter((name) => ctx.tools.isConcurrencySafe(name))).toEqual(['read', 'grep', 'glob', 'ls'])
    await ctx.stop().catch(() => {})
  })

  test('the schema bytes listed in packages/fs/README.md are the real ones', async () => {
    const ctx = await ctxTools()
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    for (const schema of ctx.tools.schemas()) {
      const bytes = Buffer.byteLength(JSON.stringify(schema))
      const row = new RegExp(`^\\| \`${schema.name}\` \\| ([\\d,]+) \\|`, 'm').exec(readme)
      expect(row, `README row for ${schema.name}`).not.toBeNull()
      expect(Number(row![1]!.replace(/,/g, '')), schema.name).toBe(bytes)
    }
    await ctx.stop().catch(() => {})
  })
})

describe('through the real Loader', () => {
  const booted = useBoot('keel-fs-home-')

  test('the shipped composition loads @keel/fs next to bash and todo_write, and is not rewritten', async () => {
    const before = readFileSync(DEFAULT_COMPOSITION, 'utf8')
    expect(before).toMatch(/- id: fs\n {2}name: ["']@keel\/fs["']/)
    const ctx = await booted.boot({ composition: DEFAULT_COMPOSITION })
    await waitFor(() => FS_TOOLS.every((name) => ctx.tools.get(name)), 'fs tools')
    const names = ctx.tools.names()
    for (const name of [...FS_TOOLS, 'bash', 'todo_write']) expect(names).toContain(name)
    expect(readFileSync(DEFAULT_COMPOSITION, 'utf8')).toBe(before)
  })
})
