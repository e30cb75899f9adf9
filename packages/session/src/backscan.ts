import { closeSync, readSync } from 'node:fs'
import { openSessionFile } from './regular.ts'
import type { SessionEvent } from './types.ts'

export interface BackscanResult<T> {
  /** What the visitor returned, or undefined when it reached the header without an answer. */
  value: T | undefined
  bytesRead: number
}

const BLOCK = 64 * 1024

/**
 * Walks a session file's events from the last line backwards, reading fixed blocks from the end, and stops at the
 * first event for which `visit` returns a value other than undefined. Only the lines it visits are parsed, so the
 * cost depends on how far back the answer lies, not on the log's length. A torn last line (no newline after it) is
 * never visited, exactly as a load drops it; neither is the header (the only line with no newline before it) nor a
 * line that is not JSON.
 */
export function backscan<T>(path: string, visit: (event: SessionEvent) => T | undefined): BackscanResult<T> {
  const { fd, stats } = openSessionFile(path, 'read', { anySize: true }) // never a FIFO, a device or a symlink
  try {
    let position = stats.size
    let bytesRead = 0
    // Pieces of the line being assembled, in file order: blocks read since the last newline was seen. Kept apart and
    // joined once the line's start is found, so a huge line is not copied again for every block.
    let parts: Buffer[] = []
    let tornTail = true // whatever follows the file's last newline is torn (or empty)
    while (position > 0) {
      const size = Math.min(BLOCK, position)
      position -= size
      const block = Buffer.allocUnsafe(size)
      let filled = 0
      while (filled < size) {
        const n = readSync(fd, block, filled, size - filled, position + filled)
        if (n === 0) throw new Error(`${path} shrank while it was being read`)
        filled += n
      }
      bytesRead += size
      let end = block.length
      while (end > 0) {
        const newline = block.lastIndexOf(0x0a, end - 1)
        if (newline < 0) break
        const start = newline + 1
        if (tornTail) {
          tornTail = false // the piece after the file's last newline: skipped
        } else {
          const line = parts.length ? Buffer.concat([block.subarray(start, end), ...parts]) : block.subarray(start, end)
          if (line.length) {
            const value = visitLine(line.toString('utf8'), visit)
            if (value !== undefined) return { value, bytesRead }
          }
        }
        parts = []
        end = newline
      }
      if (end > 0) parts.unshift(block.subarray(0, end))
    }
    return { value: undefined, bytesRead }
  } finally {
    closeSync(fd)
  }
}

function visitLine<T>(line: string, visit: (event: SessionEvent) => T | undefined): T | undefined {
  let parsed: SessionEvent
  try {
    parsed = JSON.parse(line)
  } catch {
    return undefined
  }
  if (parsed === null || typeof parsed !== 'object' || typeof parsed.type !== 'string') return undefined
  return visit(parsed)
}
