// Small files under $KEEL_HOME/cache that spare a later run some work (the first request's tool schemas, the sandbox
// probe's answer). A cache: every read may find nothing, every write may fail, and a reader must treat what it finds
// as a hint it can afford to be wrong about.
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { keelHome } from './paths.ts'

/** Far more than anything Keel caches (the shipped tools' schemas are about 20 KB); anything bigger is not ours. */
const CACHE_LIMIT = 4 * 1024 * 1024

/** `$KEEL_HOME/cache/<name>`. */
export function cachePath(name: string): string {
  return join(keelHome(), 'cache', name)
}

/**
 * The cache file's text, or undefined unless it is a regular file under CACHE_LIMIT. KEEL_HOME is a folder anyone can
 * put things in: opened without following a link and without blocking, a FIFO or a link to /dev/zero put there
 * cannot hang or flood the start.
 */
export function readCache(name: string): string | undefined {
  let fd: number
  try {
    fd = openSync(cachePath(name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const stats = fstatSync(fd)
    return stats.isFile() && stats.size <= CACHE_LIMIT ? readFileSync(fd, 'utf8') : undefined
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}

/** Replaces the cache file whole (a reader never sees half of it); unchanged text is not rewritten; failures are ignored. */
export function writeCache(name: string, text: string): void {
  const file = cachePath(name)
  const temporary = `${file}.${process.pid}.tmp`
  try {
    if (readCache(name) === text) return
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
    writeFileSync(temporary, text)
    renameSync(temporary, file)
  } catch {
    // A full disk fails the write after the file was made: no half-written temporary stays behind.
    try {
      rmSync(temporary, { force: true })
    } catch {}
  }
}
