import { setFlagsFromString } from 'node:v8'

/**
 * V8 doubles the young generation each time a scavenge finds much of it alive, which loading a few megabytes of
 * code at once does (the shell parser and the sandbox runtime at the first command): the heap then holds tens of MB
 * of mostly empty semi-spaces for the rest of the run. After boot, Keel keeps it at the size it has reached: about
 * 9 MB less peak RSS in a sandboxed tool loop (bench/agent.bench.ts), for a few more sub-millisecond scavenges.
 * Not before boot: start-up allocates mostly long-lived objects, and small semi-spaces there slow the first request.
 * Only V8 versions known to have the flag are told (an unknown flag prints an error). Not while the build fills the
 * code cache (KEEL_WRITE_CODE_CACHE): V8 refuses bytecode cached under other flags, and a normal start reads the
 * cache before boot, under the default flags.
 */
export function stopYoungGenerationGrowth(): void {
  if (process.env.KEEL_WRITE_CODE_CACHE) return
  const major = Number(process.versions.v8.split('.')[0])
  if (major >= 11 && major <= 13) setFlagsFromString('--semi-space-growth-factor=1')
}
