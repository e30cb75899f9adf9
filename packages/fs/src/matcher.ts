// grep's regex runs in a worker thread. JavaScript regexes backtrack, and a pattern such as (a+)+$ can take longer
// than the universe on one short line; on the main thread that would freeze the whole process (Ctrl+C, `keel serve`
// and every other session with it). In a worker the event loop stays free and the search can be stopped at once:
// terminate() ends even a regex that never returns. The worker is plain JavaScript passed as a string, so it runs the
// same from the TypeScript sources, under vitest and from the esbuild bundle.
import { createRequire } from 'node:module'
import type { Worker } from 'node:worker_threads'
import { yieldToLoop } from './limit.ts'

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

/** The search itself, one source for the worker and for the main thread (`InlineMatcher`). */
const SEARCH_SOURCE = String.raw`
const decoder = new TextDecoder()

function cutChars(text, max) {
  if (text.length <= max) return text
  const cut = text.slice(0, max)
  const last = cut.charCodeAt(cut.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut
}

function snippet(line, index, width) {
  if (line.length <= width) return line
  const start = Math.max(0, Math.min(index - 100, line.length - width))
  const body = cutChars(line.slice(start), width)
  return (start > 0 ? '…' : '') + body + (start + body.length < line.length ? '…' : '')
}

function searchFiles(regex, width, files, want) {
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
      if (shown.length < want) shown.push(file.name + ':' + (file.lines ? file.lines[i] : i + 1) + ': ' + snippet(line, match.index, width))
    }
    want -= shown.length
    results.push({ count, shown })
  }
  return results
}
`

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const regex = new RegExp(workerData.pattern, workerData.flags)
${SEARCH_SOURCE}
parentPort.on('message', ({ files, want }) => {
  parentPort.postMessage(searchFiles(regex, workerData.width, files, want))
})
`

type Search = (regex: RegExp, width: number, files: FileToSearch[], want: number) => FileMatches[]
let inline: Search | undefined

/** A pattern of plain characters only: its regex runs in time linear in the text, so the main thread may run it. */
export const isLiteral = (source: string) => !/[\\^$.*+?()[\]{}|]/.test(source)

export interface Matcher {
  /** Searches a batch of files; `want` caps the lines returned as text across the batch. */
  match(files: FileToSearch[], want: number): Promise<FileMatches[]>
  close(): Promise<void>
}

/**
 * A literal pattern's search on the main thread, a batch at a time with a turn of the loop before each: starting a
 * worker cost about a bare `rg`'s whole run, and a literal cannot backtrack.
 */
export class InlineMatcher implements Matcher {
  private readonly regex: RegExp

  constructor(pattern: string, flags: string) {
    this.regex = new RegExp(pattern, flags)
    // The very source the worker runs, so the two searches cannot drift apart.
    inline ??= new Function(`${SEARCH_SOURCE}; return searchFiles`)() as Search
  }

  async match(files: FileToSearch[], want: number): Promise<FileMatches[]> {
    await yieldToLoop()
    return inline!(this.regex, GREP_LINE_CHARS, files, want)
  }

  async close(): Promise<void> {}
}

/** One grep's worker. `close()` terminates it, whatever it is doing. */
export class RegexMatcher implements Matcher {
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
