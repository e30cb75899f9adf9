// Reading a session log line by line without trusting the entry: no following a link, no blocking on a FIFO
// swapped in since the listing checked it, a regular file or nothing. Shared by `keel sessions search` and the
// session rows of the picker and `keel sessions list`, so neither can hang on a file the other would refuse.
import { constants, createReadStream, promises as fsp } from 'node:fs'
import { StringDecoder } from 'node:string_decoder'

export interface LineVisitor {
  /** A chunk of whole lines (the header left out); false passes it over unsplit. Absent: every chunk is split. */
  chunk?(text: string): boolean
  /** One event line (the header left out), possibly torn at the end of the file. */
  line(text: string): void
}

const WHOLE = 1024 * 1024

/** Streams the event lines of the log at `path`; resolves to why it could not be read to the end, or undefined. */
export async function streamSessionLines(
  path: string,
  visitor: LineVisitor,
  signal?: AbortSignal,
): Promise<string | undefined> {
  let handle: fsp.FileHandle
  let size: number
  try {
    handle = await fsp.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    const stats = await handle.stat()
    size = stats.size
    if (!stats.isFile()) {
      await handle.close()
      return 'not a regular file'
    }
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message
  }
  const decoder = new StringDecoder('utf8')
  let rest = ''
  let headerSeen = false
  const onLines = (text: string) => {
    let start = 0
    if (!headerSeen) {
      const end = text.indexOf('\n')
      if (end < 0) return
      headerSeen = true
      start = end + 1
    }
    if (visitor.chunk && !visitor.chunk(start ? text.slice(start) : text)) return
    for (let end = text.indexOf('\n', start); end >= 0; end = text.indexOf('\n', start)) {
      visitor.line(text.slice(start, end))
      start = end + 1
    }
    if (start < text.length) visitor.line(text.slice(start))
  }
  try {
    // Most logs are small: one read is much cheaper than a stream; a big one is streamed, never held whole.
    if (size <= WHOLE) {
      onLines((await handle.readFile(signal ? { signal } : {})).toString('utf8'))
      return undefined
    }
    const stream = createReadStream('', { fd: handle.fd, autoClose: false, highWaterMark: 256 * 1024, signal })
    for await (const chunk of stream) {
      const text = rest + decoder.write(chunk as Buffer)
      const last = text.lastIndexOf('\n')
      if (last < 0) {
        rest = text
        continue
      }
      rest = text.slice(last + 1)
      onLines(text.slice(0, last))
    }
    rest += decoder.end()
    if (rest) onLines(rest)
  } catch (error) {
    if (signal?.aborted) throw error
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message
  } finally {
    await handle.close().catch(() => {})
  }
  return undefined
}

/** `visit` over every item, `inFlight` at a time (files are read a few at once), results in the items' order. */
export async function mapInFlight<T, R>(
  items: readonly T[],
  inFlight: number,
  visit: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      out[index] = await visit(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, worker))
  return out
}
