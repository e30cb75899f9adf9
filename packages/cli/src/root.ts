import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Finds a file or folder shipped with Keel by walking up from this module: the same lookup works from the
 * TypeScript sources (packages/cli/src) and from the bundle (dist/).
 */
export function shipped(relative: string, from = import.meta.url): string {
  let dir = dirname(fileURLToPath(from))
  for (;;) {
    const candidate = join(dir, relative)
    if (existsSync(candidate)) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`cannot find ${relative} near ${fileURLToPath(from)}`)
    dir = parent
  }
}
