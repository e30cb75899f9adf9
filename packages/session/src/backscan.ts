import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
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
 * cost depends on how far back the answer lies, not on the log's length. A torn last line does not parse and is
 * passed over; the header line (the only one with no newline before it) is never visited.
 */
export function backscan<T>(path: string, visit: (event: SessionEvent) => T | undefined): BackscanResult<T> {
  const fd = openSync(path, 'r')
  try {
    let position = fstatSync(fd).size
    let bytesRead = 0
    let head: Buffer = Buffer.alloc(0) // the start of a line whose beginning lies in an earlier block
    while (position > 0) {
      const size = Math.min(BLOCK, position)
      position -= size
      const block = Buffer.allocUnsafe(size)
      readSync(fd, block, 0, size, position)
      bytesRead += size
      const buffer = head.length ? Buffer.concat([block, head]) : block
      let end = buffer.length
      while (end > 0) {
        const newline = buffer.lastIndexOf(0x0a, end - 1)
        if (newline < 0) break
        if (newline + 1 < end) {
          const value = visitLine(buffer.toString('utf8', newline + 1, end), visit)
          if (value !== undefined) return { value, bytesRead }
        }
        end = newline
      }
      head = buffer.subarray(0, end)
    }
    return { value: undefined, bytesRead }
  } finally {
    closeSync(fd)
  }
}

function visitLine<T>(line: string, visit: (event: SessionEvent) => T | undefined): T | undefined {
  let parsed: SessionEvent
  try { parsed = JSON.parse(line) } catch { return undefined }
  return visit(parsed)
}
