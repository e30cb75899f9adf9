import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Context, type ForkScope, Logger } from 'cordis'
import { DEFAULT_COMPOSITION, SHIPPED_COMPOSITION } from './composition.ts'
import type { KeelLoader } from './loader.ts'
import { BUILTIN_PLUGINS } from './plugins.ts'
import { withStore } from './store-entry.ts'

export { DEFAULT_COMPOSITION }

export class BootError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'BootError'
  }
}

export interface BootOptions {
  /**
   * A composition file, loaded through the cordis Loader. Without one, the shipped composition (SHIPPED_COMPOSITION,
   * the same plugins and configs as packages/cli/keel.yml) is wired directly: no YAML, no Loader, no resolving.
   */
  composition?: string
  /** Also load the dev-mode invariants (KEEL_DEV=1 does this too). */
  dev?: boolean
  /** Services that must be up before boot returns. */
  require?: string[]
  /** Entry id → config replacing the composition's (settings files; see settings.ts). */
  overrides?: Record<string, Record<string, unknown>>
  /** A postgres:// URL: the session entry loads @keel/store-pg over that database instead of the JSONL files. */
  store?: string
}

/**
 * cordis's logger prints to stdout, which belongs to print mode's answer and to ACP's protocol: route it to
 * stderr, and only when KEEL_DEBUG asks for it (Keel reports load errors itself, as one line).
 */
export function quietCordisLogger(): void {
  Logger.targets.splice(0, Logger.targets.length)
  if (process.env.KEEL_DEBUG)
    Logger.targets.push({ colors: 0, print: (text: string) => process.stderr.write(text + '\n') })
}

/** How long plugins are applied before the event loop gets a turn (see boot). */
const APPLY_SLICE_MS = 8

/** The plugins a lean boot loaded, in order, so shutdown can unload them as the Loader would its entries. */
const leanForks = new WeakMap<Context, ForkScope[]>()

/**
 * Boots a cordis Context, from a composition file or the shipped composition, and waits until every plugin is
 * loaded and the required services are up; load errors are fatal.
 */
export async function boot(options: BootOptions = {}): Promise<Context> {
  const composition = options.composition === undefined ? undefined : resolve(options.composition)
  const where = composition ?? DEFAULT_COMPOSITION
  if (composition) {
    try {
      readFileSync(composition)
    } catch {
      throw new BootError(`cannot read composition file ${composition}`)
    }
  }
  quietCordisLogger()
  const ctx = new Context()
  const errors: string[] = []
  ctx.on('internal/error', (error: unknown) => {
    errors.push(error instanceof Error ? error.message : String(error))
  })
  ctx.on('internal/warning', (warning: unknown) => {
    if (process.env.KEEL_DEBUG)
      process.stderr.write(`keel: ${warning instanceof Error ? warning.message : String(warning)}\n`)
  })
  const dev = options.dev || process.env.KEEL_DEV === '1'
  let settled: () => boolean
  if (composition) {
    const { KeelLoader } = await import('./loader.ts')
    ctx.plugin(KeelLoader, {
      name: 'keel',
      filename: composition,
      overrides: options.overrides ?? {},
      store: options.store,
    } as never)
    await ctx.start()
    const loader = ctx.get('loader') as KeelLoader
    if (dev) await loader.create({ name: '@keel/session/dev' })
    settled = () => [...loader.entries()].every((entry) => entry.fork || entry.disabled)
  } else {
    const entries = [...SHIPPED_COMPOSITION, ...(dev ? [{ id: 'dev', name: '@keel/session/dev' }] : [])].map((entry) =>
      withStore(entry, options.store),
    )
    // Every module first (they load in parallel), then the plugins in composition order, as the Loader would.
    const modules = await Promise.all(entries.map((entry) => BUILTIN_PLUGINS[entry.name]!()))
    const forks: ForkScope[] = []
    leanForks.set(ctx, forks)
    // The plugins are applied in runs of a few milliseconds with a turn of the event loop between runs: print mode's
    // first request may be in flight (first-request.ts), and its DNS lookup, connection and TLS handshake move on only
    // when the event loop runs; a turn after every plugin cost the boot more than it gave the request.
    let slice = performance.now()
    for (const [i, entry] of entries.entries()) {
      forks.push(
        ctx.plugin(
          modules[i] as never,
          entry.name === '@keel/store-pg' ? entry.config : (options.overrides?.[entry.id] ?? entry.config),
        ),
      )
      if (performance.now() - slice >= APPLY_SLICE_MS) {
        await new Promise((done) => setImmediate(done))
        slice = performance.now()
      }
    }
    await ctx.start()
    settled = () => true
  }
  const required = options.require ?? ['sessions', 'tools', 'llm', 'agents']
  const up = () => settled() && required.every((key) => ctx.get(key))
  const deadline = Date.now() + 10_000
  while (!errors.length && !up() && Date.now() < deadline) await new Promise((done) => setTimeout(done, 2))
  await ctx.lifecycle.flush()
  if (errors.length) {
    await shutdown(ctx)
    throw new BootError(`${where}: ${errors[0]}`)
  }
  const missing = required.filter((key) => !ctx.get(key))
  if (missing.length) throw new BootError(`${where}: these services did not start: ${missing.join(', ')}`)
  return ctx
}

/**
 * Unloads every plugin, which closes sessions (flushing files, releasing locks). The context itself is not stopped:
 * @cordisjs/loader 0.13.1 throws while removing its own service, and nothing is left running by then.
 */
export async function shutdown(ctx: Context): Promise<void> {
  const forks = leanForks.get(ctx)
  if (forks) {
    leanForks.delete(ctx)
    for (const fork of forks) {
      try {
        fork.dispose()
      } catch {}
    }
    return
  }
  const loader = ctx.get('loader') as KeelLoader | undefined
  try {
    await loader?.stop()
  } catch {}
}
