// Where a program is on PATH, found in this process: a `which` process is a synchronous spawn (a few ms of blocked
// event loop, more under load), and the runtime asked for one at every wrap (`which bash`) and at its start. The
// bundle's copy of the runtime calls this instead (scripts/runtime-patches.mjs). No imports beyond Node's: the patch
// pulls this file into the runtime's own chunk.
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, join } from 'node:path'

/** `bin` as `which` finds it: a path with a slash when it is an executable file, else the first on PATH. */
export function which(bin: string): string | undefined {
  if (bin.includes('/')) return executable(bin) ? bin : undefined
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue
    const path = join(dir, bin)
    if (executable(path)) return path
  }
  return undefined
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}
