// A small cordis Loader for tests (the base Loader of @cordisjs/loader, re-exported as cordis/loader; cordis is a
// dependency of this package). It differs from @cordisjs/loader's default export, NodeLoader, in the ways Keel needs:
// - it is the base `Loader`: no `.env` files are read into process.env, process.env is not reset;
// - plugin names resolve from here (workspace packages, through the test runner's TypeScript transform), not
//   relative to the loader package;
// - it never rewrites the composition file it loaded: the base Loader writes the file back whenever an entry's
//   config or state changes (a plugin disposing itself marks it `disabled: true` on disk). Writes are counted.
// The production loader for the CLI lives in packages/cli; this one is for tests of the session package.
// Known noise: stopping the root context prints "TypeError: Cannot read properties of undefined (reading 'entries')"
// from @cordisjs/loader 0.13.1 itself (its inject checker runs once more after the `loader` service is removed).
import { Loader } from 'cordis/loader'
import { Context } from 'cordis'

export class TestLoader extends Loader {
  /** How many times the Loader wanted to rewrite its file. */
  writeAttempts = 0

  override async import(name: string): Promise<unknown> {
    return import(name)
  }

  override write(): void {
    this.writeAttempts++
  }
}

/** Boots a root context on a composition file through TestLoader and waits until the given services are up. */
export async function loadComposition(
  filename: string,
  services: string[],
  timeoutMs = 10_000,
): Promise<{ ctx: Context; loader: TestLoader }> {
  const ctx = new Context()
  const errors: unknown[] = []
  ctx.on('internal/error', (error: unknown) => {
    errors.push(error)
  })
  ctx.on('internal/warning', () => {})
  ctx.plugin(TestLoader, { name: 'keel', filename })
  await ctx.start()
  const loader = ctx.get('loader') as unknown as TestLoader
  await waitFor(() => services.every((name) => ctx.get(name) !== undefined) || errors.length > 0, timeoutMs)
  if (errors.length) throw errors[0] instanceof Error ? errors[0] : new Error(String(errors[0]))
  return { ctx, loader }
}

export async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
