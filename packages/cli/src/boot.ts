import { readFileSync } from 'node:fs'
import { dirname, isAbsolute, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Context, Logger } from 'cordis'
import { Loader } from '@cordisjs/loader'
import { BUILTIN_PLUGINS } from './plugins.ts'
import { shipped } from './root.ts'

export const DEFAULT_COMPOSITION = shipped('packages/cli/keel.yml')

/**
 * The cordis Loader, adapted: plugin names resolve to Keel's built-ins first, then relative to the composition
 * file (not to the loader package), settings replace entry configs in memory, and the file is never written back.
 */
export class KeelLoader extends Loader {
  async refresh(): Promise<void> {
    // Entry id → the config it loads with instead of the file's (from settings files), passed in boot's plugin config.
    const overrides = (this.config as { overrides?: Record<string, Record<string, unknown>> }).overrides ?? {}
    const entries = await this.file.read()
    this.root.update(entries.map((entry) => (overrides[entry.id] ? { ...entry, config: overrides[entry.id] } : entry)))
  }

  async import(name: string): Promise<unknown> {
    const builtin = BUILTIN_PLUGINS[name]
    if (builtin) return builtin()
    if (name.startsWith('.') || isAbsolute(name)) {
      return import(pathToFileURL(resolve(dirname(fileURLToPath(this.url)), name)).href)
    }
    return import(name)
  }

  write(): void {
    // Deliberately empty: the Loader would persist entry changes into the user's file.
  }
}

export class BootError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'BootError'
  }
}

export interface BootOptions {
  composition?: string
  /** Also load the dev-mode invariants (KEEL_DEV=1 does this too). */
  dev?: boolean
  /** Services that must be up before boot returns. */
  require?: string[]
  /** Entry id → config replacing the composition's (settings files; see settings.ts). */
  overrides?: Record<string, Record<string, unknown>>
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

/** Boots a cordis Context from a composition file and waits until every entry is loaded; load errors are fatal. */
export async function boot(options: BootOptions = {}): Promise<Context> {
  const composition = resolve(options.composition ?? DEFAULT_COMPOSITION)
  try {
    readFileSync(composition)
  } catch {
    throw new BootError(`cannot read composition file ${composition}`)
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
  ctx.plugin(KeelLoader, { name: 'keel', filename: composition, overrides: options.overrides ?? {} } as never)
  await ctx.start()
  const loader = ctx.get('loader') as KeelLoader
  if (options.dev || process.env.KEEL_DEV === '1') await loader.create({ name: '@keel/session/dev' })
  const required = options.require ?? ['sessions', 'tools', 'llm', 'agents']
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (errors.length) break
    const entries = [...loader.entries()]
    if (entries.every((entry) => entry.fork || entry.disabled) && required.every((key) => ctx.get(key))) break
    await new Promise((done) => setTimeout(done, 2))
  }
  await ctx.lifecycle.flush()
  if (errors.length) {
    await shutdown(ctx)
    throw new BootError(`${composition}: ${errors[0]}`)
  }
  const missing = required.filter((key) => !ctx.get(key))
  if (missing.length) throw new BootError(`${composition}: these services did not start: ${missing.join(', ')}`)
  return ctx
}

/**
 * Unloads every entry, which closes sessions (flushing files, releasing locks). The context itself is not stopped:
 * @cordisjs/loader 0.13.1 throws while removing its own service, and nothing is left running by then.
 */
export async function shutdown(ctx: Context): Promise<void> {
  const loader = ctx.get('loader') as KeelLoader | undefined
  try {
    await loader?.stop()
  } catch {}
}
