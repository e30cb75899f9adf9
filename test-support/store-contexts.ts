// Contexts over one test database, each under a host name of its own (the store reads KEEL_HOST as it starts): what
// several machines sharing a PostgreSQL store look like inside one test process.
import { Context } from 'cordis'
import * as pgPlugin from '@keel/store-pg'
import { feedOf } from '@keel/store-pg'

export class StoreContexts {
  private readonly started: Context[] = []

  constructor(private readonly url: () => string) {}

  /** A context on the store as `host`, with `plugins`; its feed already listening. */
  async boot(host: string, plugins: [unknown, unknown?][] = []): Promise<Context> {
    const before = process.env.KEEL_HOST
    process.env.KEEL_HOST = host
    const ctx = new Context()
    ctx.on('internal/warning', () => {})
    ctx.plugin(pgPlugin, { url: this.url() })
    for (const [plugin, config] of plugins) ctx.plugin(plugin as never, config)
    try {
      await ctx.start()
      await ctx.lifecycle.flush()
      feedOf(ctx.sessions)
    } finally {
      if (before === undefined) delete process.env.KEEL_HOST
      else process.env.KEEL_HOST = before
    }
    this.started.push(ctx)
    return ctx
  }

  async stop(): Promise<void> {
    for (const ctx of this.started.splice(0)) await ctx.stop()
  }
}

/** Waits until `check` holds (notifications arrive on the event loop), else fails naming `what`. */
export async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 20))
  }
}
