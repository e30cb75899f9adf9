import { setFlagsFromString } from 'node:v8'

/**
 * V8 doubles the young generation each time a scavenge finds much of it alive, which loading a few megabytes of
 * code at once does (the shell parser and the sandbox runtime at the first command): the heap then holds tens of MB
 * of mostly empty semi-spaces for the rest of the run. After boot, Keel keeps it at the size it has reached: about
 * 9 MB less peak RSS in a sandboxed tool loop (bench/agent.bench.ts), for a few more sub-millisecond scavenges.
 * Not before boot: start-up allocates mostly long-lived objects, and small semi-spaces there slow the first request.
 * Only V8 versions known to have the flag (default 2) are told (an unknown flag prints an error). This module loads
 * with commands.ts, after print mode's early first request is out (node:v8 costs a cold start about 3 ms).
 *
 * bin/bundle-loader.js is told first: V8 refuses bytecode cached under other flags, so the loader writes the cache
 * of the chunks compiled before this change under the flags they were compiled with.
 */
export function stopYoungGenerationGrowth(): void {
  const major = Number(process.versions.v8.split('.')[0])
  if (major < 11 || major > 13) return
  const flagsChanging = (globalThis as Record<symbol, ((undo: () => void) => void) | undefined>)[
    Symbol.for('keel.flagsChanging')
  ]
  flagsChanging?.(() => setFlagsFromString('--semi-space-growth-factor=2'))
  setFlagsFromString('--semi-space-growth-factor=1')
}
