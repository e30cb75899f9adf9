import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'

const HEADER_BYTES = 64 * 1024

/**
 * The working directory named in a session file's header, or undefined when the file is not a regular file or has
 * no readable header. Opened non-blocking and checked with fstat, so a FIFO or device named like a session is
 * skipped rather than read; only the first line (at most 64 KiB) is read.
 */
export function sessionFileCwd(path: string): string | undefined {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined
    const buffer = Buffer.alloc(HEADER_BYTES)
    const size = readSync(fd, buffer, 0, buffer.length, 0)
    const end = buffer.subarray(0, size).indexOf(0x0a)
    const header = JSON.parse(buffer.toString('utf8', 0, end < 0 ? size : end)) as { cwd?: unknown }
    return typeof header.cwd === 'string' ? header.cwd : undefined
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}
