import type { FileHandle } from 'node:fs/promises'

export interface WindowLine {
  /** 1-based line number. */
  number: number
  text: string
  /** Set when the line was cut: its full length in bytes. */
  fullBytes?: number
}

export interface LineWindow {
  lines: WindowLine[]
  /** Lines in the whole file (a last line without a newline counts; a trailing newline adds none). */
  totalLines: number
  /** First line that was not returned because the character budget ran out. */
  budgetStop?: number
  /** False when counting the lines after the window stopped at `countUntil`: `totalLines` is then a lower bound. */
  counted: boolean
}

export interface WindowOptions {
  /** 1-based first line. */
  offset: number
  limit: number
  maxLineChars: number
  /** Characters (line text plus its number prefix) the window may hold. */
  maxChars: number
  signal?: AbortSignal
  chunkBytes?: number
  /** Date.now() past which lines after a complete window are no longer counted (a huge file stays quick to read). */
  countUntil?: number
}

/** Cuts at a UTF-16 length without leaving half a surrogate pair at the end. */
export function cutChars(text: string, max: number): string {
  if (text.length <= max) return text
  const cut = text.slice(0, max)
  const last = cut.charCodeAt(cut.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut
}

/**
 * Reads a window of lines in fixed-size chunks. Memory stays bounded by the chunk, the window and one capped line
 * per line, whatever the file size and however long its lines are: lines before the window are only counted,
 * lines after it are counted so the caller can say how many remain.
 */
export async function readLineWindow(handle: FileHandle, options: WindowOptions): Promise<LineWindow> {
  const { offset, limit, maxLineChars, maxChars, signal } = options
  const chunk = Buffer.alloc(options.chunkBytes ?? 64 * 1024)
  // Enough bytes for maxLineChars characters however they are encoded (UTF-8 spends at most 3 bytes per UTF-16 unit).
  const keep = Buffer.alloc(maxLineChars * 4 + 4)
  const lines: WindowLine[] = []
  let kept = 0
  let lineBytes = 0
  let number = 1
  let chars = 0
  let budgetStop: number | undefined
  const capturing = () => budgetStop === undefined && number >= offset && number < offset + limit

  const finishLine = () => {
    if (capturing()) {
      let bytes = keep.subarray(0, kept)
      const whole = kept === lineBytes
      if (whole && bytes.length && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, -1)
      let text = bytes.toString('utf8')
      if (number === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      const line: WindowLine = { number, text }
      if (!whole || text.length > maxLineChars) {
        line.text = cutChars(text, maxLineChars)
        line.fullBytes = lineBytes
      }
      const cost = line.text.length + 8
      if (lines.length && chars + cost > maxChars) budgetStop = number
      else {
        lines.push(line)
        chars += cost
      }
    }
    number++
    kept = 0
    lineBytes = 0
  }

  let position = 0
  let counted = true
  for (;;) {
    if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('read aborted')
    const windowDone = budgetStop !== undefined || number >= offset + limit
    if (windowDone && options.countUntil !== undefined && Date.now() > options.countUntil) {
      counted = false
      break
    }
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position)
    if (bytesRead === 0) break
    position += bytesRead
    const view = chunk.subarray(0, bytesRead)
    let at = 0
    while (at < bytesRead) {
      const newline = view.indexOf(0x0a, at)
      const end = newline < 0 ? bytesRead : newline
      if (capturing() && kept < keep.length) {
        const take = Math.min(end - at, keep.length - kept)
        view.copy(keep, kept, at, at + take)
        kept += take
      }
      lineBytes += end - at
      if (newline < 0) break
      finishLine()
      at = newline + 1
    }
  }
  if (lineBytes > 0 && counted) finishLine()
  return { lines, totalLines: number - 1, budgetStop, counted }
}
