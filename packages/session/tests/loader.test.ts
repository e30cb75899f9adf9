import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { InvariantError, readLock } from '@keel/session'
import { loadComposition, waitFor, type TestLoader } from './loader.ts'
import { useTempHome } from './helpers.ts'

useTempHome()
const fixture = fileURLToPath(new URL('./fixtures/composition.yml', import.meta.url))
let ctx: Context | undefined
let dir = ''
afterEach(async () => {
  await ctx?.stop()
  ctx = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = ''
})

describe('plugin modules', () => {
  it.each(['@keel/session', '@keel/session/dev'])(
    '%s has named exports only, so unwrapExports returns the namespace itself',
    async (specifier) => {
      const ns = await import(specifier)
      expect('default' in ns).toBe(false)
      expect(typeof ns.apply).toBe('function')
      expect(typeof ns.name).toBe('string')
      expect(ns.Config).toBeDefined()
      const { Loader } = await import('cordis/loader')
      expect(Loader.prototype.unwrapExports.call(null, ns)).toBe(ns)
    },
  )
})

describe('real cordis Loader', () => {
  async function load(): Promise<TestLoader> {
    dir = mkdtempSync(join(tmpdir(), 'keel-loader-'))
    const copy = join(dir, 'keel.yml')
    copyFileSync(fixture, copy)
    // NodeLoader would read this into process.env; the base Loader must not.
    writeFileSync(join(dir, '.env'), 'KEEL_LOADER_TEST_DOTENV=leaked\n')
    const booted = await loadComposition(copy, ['sessions', 'projections', 'invariants'])
    ctx = booted.ctx
    return booted.loader
  }

  it('loads @keel/session and @keel/session/dev from a YAML composition', async () => {
    const original = readFileSync(fixture, 'utf8')
    const loader = await load()
    for (const ns of [await import('@keel/session'), await import('@keel/session/dev')]) {
      expect(loader.unwrapExports(ns)).toBe(ns)
      expect('default' in ns).toBe(false)
    }
    expect(process.env.KEEL_LOADER_TEST_DOTENV).toBeUndefined()

    const session = ctx!.sessions.create({ cwd: '/p' })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    expect(() => session.append('turn/start', { turn: 1, trigger: 'prompt' })).toThrow(InvariantError)

    // HMR through the Loader: dispose the dev entry's fork → the checks are gone.
    const dev = loader.resolve('dev')
    dev.fork!.dispose()
    await waitFor(() => ctx!.get('invariants') === undefined)
    session.append('test/note', { text: 'unchecked' })
    session.append('turn/end', { turn: 1, reason: 'completed' })
    session.append('turn/end', { turn: 1, reason: 'completed' }) // no longer vetoed

    // The base Loader wanted to record that on disk (dev: disabled); TestLoader never writes.
    expect(loader.writeAttempts).toBeGreaterThan(0)
    expect(dev.options.disabled).toBe(true)
    expect(readFileSync(join(dir, 'keel.yml'), 'utf8')).toBe(original)
    expect(readFileSync(fixture, 'utf8')).toBe(original)

    // Reload → back.
    await dev.update({ disabled: null })
    await waitFor(() => ctx!.get('invariants') !== undefined)
    expect(() => session.append('test/note', { text: 'x' })).toThrow(/a non-core event outside an open turn/)
    expect(readFileSync(fixture, 'utf8')).toBe(original)
  })

  it('disposing the session entry closes its sessions', async () => {
    const loader = await load()
    const session = ctx!.sessions.create({ cwd: '/p', id: 'loaded' })
    const path = ctx!.sessions.pathOf('loaded')!
    expect(readLock(path + '.lock')?.pid).toBe(process.pid)
    loader.resolve('session').fork!.dispose()
    await waitFor(() => ctx!.get('sessions') === undefined)
    expect(() => readFileSync(path + '.lock')).toThrow()
    expect(() => session.append('turn/start', { turn: 1, trigger: 'prompt' })).toThrow(/closed/)
  })
})
