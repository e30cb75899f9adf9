// grep's regex runs in a worker thread. JavaScript regexes backtrack, and a pattern such as (a+)+$ can take longer
// than the universe on one short line; on the main thread that would freeze the whole process (Ctrl+C, `keel serve`
// and every other session with it). In a worker the event loop stays free and the search can be stopped at once:
// terminate() ends even a regex that never returns. The worker is plain JavaScript passed as a string, so it runs the
// same from the TypeScript sources, under vitest and from the esbuild bundle.
import { createRequire } from 'node:module'
import type { Worker } from 'node:worker_threads'

/** Characters of a matching line grep shows; a longer line is shown around its first match. */
export const GREP_LINE_CHARS = 300

export interface FileToSearch {
  name: string
  bytes: Uint8Array
  /** The line number of each line in `bytes`, when they are lines picked out of the file (ripgrep's candidates). */
  lines?: number[]
}

export interface FileMatches {
  /** Matching lines in the file. */
  count: number
  /** `name:line: text`, at most the number asked for. */
  shown: string[]
}

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads')
const regex = new RegExp(workerData.pattern, workerData.flags)
const WIDTH = workerData.width
const decoder = new TextDecoder()

function cutChars(text, max) {
  if (text.length <= max) return text
  const cut = text.slice(0, max)
  const last = cut.charCodeAt(cut.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut
}

function snippet(line, index) {
  if (line.length <= WIDTH) return line
  const start = Math.max(0, Math.min(index - 100, line.length - WIDTH))
  const body = cutChars(line.slice(start), WIDTH)
  return (start > 0 ? '…' : '') + body + (start + body.length < line.length ? '…' : '')
}

parentPort.on('message', ({ files, want }) => {
  const results = []
  for (const file of files) {
    const lines = decoder.decode(file.bytes).split('\n')
    const shown = []
    let count = 0
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].endsWith('\r') ? lines[i].slice(0, -1) : lines[i]
      const match = regex.exec(line)
      if (!match) continue
      count++
      if (shown.length < want) shown.push(file.name + ':' + (file.lines ? file.lines[i] : i + 1) + ': ' + snippet(line, match.index))
    }
    want -= shown.length
    results.push({ count, shown })
  }
  parentPort.postMessage(results)
})
`

/** One grep's worker. `close()` terminates it, whatever it is doing. */
export class RegexMatcher {
  private readonly worker: Worker
  private failure: Error | undefined
  private pending: { resolve: (results: FileMatches[]) => void; reject: (error: Error) => void } | undefined

  constructor(pattern: string, flags: string, signal: AbortSignal) {
    // Loaded at the first grep, not at start-up, where it cost about 2 ms of every run.
    const { Worker } = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads')
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { pattern, flags, width: GREP_LINE_CHARS },
      // A pathological pattern or file must not take the host's memory with it.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    })
    this.worker.on('message', (results: FileMatches[]) => {
      const pending = this.pending
      this.pending = undefined
      pending?.resolve(results)
    })
    const fail = (error: Error) => {
      this.failure ??= error
      const pending = this.pending
      this.pending = undefined
      pending?.reject(this.failure)
    }
    this.worker.on('error', (error) => fail(new Error(`grep's search failed: ${error.message}`)))
    this.worker.on('exit', () => fail(new Error("grep's search stopped")))
    // The abort reason says why (cancelled, or out of time); terminate() ends even a regex that never returns.
    const stop = () => {
      fail(signal.reason instanceof Error ? signal.reason : new Error('grep aborted'))
      void this.worker.terminate()
    }
    if (signal.aborted) stop()
    else signal.addEventListener('abort', stop, { once: true })
    this.worker.once('exit', () => signal.removeEventListener('abort', stop))
  }

  /** Searches a batch of files; `want` caps the lines returned as text across the batch. */
  match(files: FileToSearch[], want: number): Promise<FileMatches[]> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      // Copied, not transferred: a small Buffer shares its ArrayBuffer with the pool other Buffers use.
      this.worker.postMessage({ files, want })
    })
  }

  async close(): Promise<void> {
    await this.worker.terminate()
  }
}
