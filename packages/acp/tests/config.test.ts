import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { Console } from 'node:console'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { boot, DEFAULT_COMPOSITION, shutdown, type KeelLoader } from '@keel/cli'
import * as acpPlugin from '../src/index.ts'
import { acpConfig, planEnabled } from '../src/config.ts'
import { guardStdout } from '../src/guard.ts'

const cleanup: (() => unknown)[] = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

describe('the @keel/acp plugin entry (plan setting)', () => {
  it('is a plain namespace plugin: named exports only, so the Loader keeps its Config and apply', async () => {
    expect('default' in acpPlugin).toBe(false)
    expect(acpPlugin.Config({} as never)).toEqual({ plan: false })
    expect(acpPlugin.Config({ plan: true })).toEqual({ plan: true })
  })

  it('loads through the real Loader from a composition file and turns plan updates on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-acp-compose-'))
    const home = mkdtempSync(join(tmpdir(), 'keel-acp-home-'))
    const previous = process.env.KEEL_HOME
    process.env.KEEL_HOME = home
    cleanup.push(() => {
      if (previous === undefined) delete process.env.KEEL_HOME
      else process.env.KEEL_HOME = previous
      rmSync(dir, { recursive: true, force: true })
      rmSync(home, { recursive: true, force: true })
    })
    const composition = join(dir, 'keel.yml')
    writeFileSync(
      composition,
      `${readFileSync(DEFAULT_COMPOSITION, 'utf8')}\n- id: acp\n  name: '@keel/acp'\n  config:\n    plan: true\n`,
    )
    const ctx = await boot({ composition })
    cleanup.push(() => shutdown(ctx))
    const loader = ctx.get('loader') as KeelLoader
    expect(loader.unwrapExports(acpPlugin)).toBe(acpPlugin)
    expect(acpConfig(ctx)).toEqual({ plan: true })
    expect(planEnabled(ctx, {})).toBe(true)
    expect(planEnabled(ctx, { KEEL_ACP_PLAN: '0' })).toBe(false)
  })

  it('lives exactly as long as the plugin (dispose removes it, reload brings it back)', async () => {
    const ctx = new Context()
    await ctx.start()
    cleanup.push(() => ctx.stop().catch(() => {}))
    expect(planEnabled(ctx, {})).toBe(false)
    const fork = ctx.plugin(acpPlugin, { plan: true })
    await ctx.lifecycle.flush()
    expect(planEnabled(ctx, {})).toBe(true)
    fork.dispose()
    expect(acpConfig(ctx)).toBeUndefined()
    expect(planEnabled(ctx, {})).toBe(false)
    ctx.plugin(acpPlugin, { plan: true })
    await ctx.lifecycle.flush()
    expect(planEnabled(ctx, {})).toBe(true)
  })

  it('lets KEEL_ACP_PLAN override the composition either way', async () => {
    const ctx = new Context()
    await ctx.start()
    cleanup.push(() => ctx.stop().catch(() => {}))
    expect(planEnabled(ctx, { KEEL_ACP_PLAN: '1' })).toBe(true)
    expect(planEnabled(ctx, { KEEL_ACP_PLAN: 'true' })).toBe(true)
    expect(planEnabled(ctx, { KEEL_ACP_PLAN: '' })).toBe(false)
    expect(planEnabled(ctx, { KEEL_ACP_PLAN: 'maybe' })).toBe(false)
  })
})

describe('guardStdout', () => {
  it('sends stray stdout writes (console included) to stderr and only protocol bytes to stdout, until released', async () => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const read = (stream: PassThrough) => (stream.read() as Buffer | null)?.toString('utf8') ?? ''
    const guard = guardStdout(stdout, stderr)
    new Console(stdout, stderr).log('stray console.log')
    stdout.write('stray write\n')
    const writer = guard.protocol.getWriter()
    await writer.write(new TextEncoder().encode('{"jsonrpc":"2.0"}\n'))
    writer.releaseLock()
    expect(read(stdout)).toBe('{"jsonrpc":"2.0"}\n')
    expect(read(stderr)).toBe('stray console.log\nstray write\n')
    guard.release()
    stdout.write('after\n')
    expect(read(stdout)).toBe('after\n')
  })
})
