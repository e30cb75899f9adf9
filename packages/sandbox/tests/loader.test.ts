import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import * as sandbox from '@keel/sandbox'
import { boot, KeelLoader, shutdown } from '@keel/cli'

describe('@keel/sandbox as a plugin', () => {
  test('named exports only: the Loader keeps the module as is', () => {
    expect('default' in sandbox).toBe(false)
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(sandbox)).toBe(sandbox)
  })

  test('loads through the real Loader from a composition file, with its config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-sandbox-loader-'))
    const previous = process.env.KEEL_HOME
    process.env.KEEL_HOME = join(dir, 'home')
    const composition = join(dir, 'keel.yml')
    writeFileSync(
      composition,
      "- id: sandbox\n  name: '@keel/sandbox'\n  config:\n    allowedDomains: [registry.npmjs.org]\n",
    )
    const ctx = await boot({ composition, require: ['sandbox'] })
    try {
      expect(ctx.get('sandbox')!.config.allowedDomains).toEqual(['registry.npmjs.org'])
    } finally {
      await shutdown(ctx)
      if (previous === undefined) delete process.env.KEEL_HOME
      else process.env.KEEL_HOME = previous
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
