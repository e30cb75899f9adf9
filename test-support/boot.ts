// For tests that boot Keel through the real cordis Loader: a temp KEEL_HOME per test, and a clean shutdown after.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import type { Context } from 'cordis'
import { boot, shutdown, type BootOptions } from '../packages/cli/src/boot.ts'

export interface BootFixture {
  /** A fresh folder for this test (composition files may go here); KEEL_HOME points at its `home` subfolder. */
  dir(): string
  /** Boots from a composition (the shipped one by default); shut down after the test. */
  boot(options?: BootOptions): Promise<Context>
}

export function useBoot(prefix = 'keel-boot-'): BootFixture {
  let ctx: Context | undefined
  let dir: string | undefined
  const previousHome = process.env.KEEL_HOME
  afterEach(async () => {
    if (ctx) await shutdown(ctx)
    ctx = undefined
    if (previousHome === undefined) delete process.env.KEEL_HOME
    else process.env.KEEL_HOME = previousHome
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = undefined
  })
  const fixture: BootFixture = {
    dir() {
      if (!dir) {
        dir = mkdtempSync(join(tmpdir(), prefix))
        process.env.KEEL_HOME = join(dir, 'home')
      }
      return dir
    },
    async boot(options) {
      fixture.dir()
      ctx = await boot(options)
      return ctx
    },
  }
  return fixture
}
