// The session log's contract is synchronous: `Session.append` returns once the event is stored, exactly as the JSONL
// store returns after its write (and fsync). A PostgreSQL client is asynchronous, so the client runs in a worker
// thread and the main thread waits for each answer on a shared counter (Atomics.wait), bounded by a timeout: a
// database that does not answer ends the call with an error instead of hanging the process. The worker is its own
// file, pg-worker.cjs (dist/pg-worker.cjs in the bundle, with pg bundled in), found beside this module's chunk.
import { createRequire } from 'node:module'
import type { MessagePort, Worker } from 'node:worker_threads'

/** A failure the database (or the way to it) reported; `code` is PostgreSQL's SQLSTATE when it sent one. */
class PgCallError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message)
    this.name = 'PgCallError'
  }
}

export type PgOp =
  | { kind: 'query'; sql: string; params?: unknown[] }
  | { kind: 'locked-query'; id: string; sql: string; params?: unknown[] }
  | { kind: 'transaction'; statements: [string, unknown[]][] }
  | { kind: 'migrate'; lockKey: number; migrations: readonly string[] }
  | { kind: 'lock'; id: string }
  | { kind: 'unlock'; id: string }
  | { kind: 'listen'; again?: boolean }
  | { kind: 'end' }

/** What the LISTEN connection says: a notification, or that it listens (again: after a dropped connection). */
export type PgNotice = { kind: 'notify'; channel: string; payload: string } | { kind: 'listening'; again: boolean }

export interface BridgeOptions {
  url: string
  /** What the server shows for this connection (`pg_stat_activity.application_name`). */
  application: string
  connectMs: number
  queryMs: number
}

/** One connection to PostgreSQL, called synchronously. Its session locks die with it (or with this process). */
export class SyncPg {
  private worker: Worker | undefined
  private port: MessagePort | undefined
  private signal: Int32Array | undefined
  private notices: MessagePort | undefined
  private onNotice: ((notice: PgNotice) => void) | undefined
  private readonly receive: (port: MessagePort) => { message: unknown } | undefined

  constructor(private readonly options: BridgeOptions) {
    const threads = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads')
    this.receive = threads.receiveMessageOnPort as never
  }

  private start(): void {
    const require = createRequire(import.meta.url)
    const { Worker, MessageChannel } = require('node:worker_threads') as typeof import('node:worker_threads')
    const shared = new SharedArrayBuffer(4)
    const { port1, port2 } = new MessageChannel()
    const ear = new MessageChannel()
    this.worker = new Worker(new URL('./pg-worker.cjs', import.meta.url), {
      workerData: { port: port2, notices: ear.port2, shared, ...this.options },
      transferList: [port2, ear.port2],
    })
    // Notifications arrive on the event loop; like the worker, this port does not keep the process alive.
    ear.port1.on('message', (notice: PgNotice) => this.onNotice?.(notice))
    ear.port1.unref()
    this.notices = ear.port1
    // The worker must not keep a finished process alive; the port is only read synchronously.
    this.worker.unref()
    port1.unref()
    this.port = port1
    this.signal = new Int32Array(shared)
  }

  /** Runs one operation and waits for its answer; throws a PgCallError with the database's message. */
  call<T>(op: PgOp): T {
    if (!this.worker) {
      this.start()
      // A worker started again (the last one timed out) listens again, and says so: the reader catches up by seq.
      if (this.onNotice && op.kind !== 'listen') this.call({ kind: 'listen', again: true })
    }
    const signal = this.signal!
    const before = Atomics.load(signal, 0)
    this.port!.postMessage(op)
    const limit = this.options.connectMs + this.options.queryMs + 1000
    const deadline = Date.now() + limit
    const timedOut = () => {
      this.stop()
      return new PgCallError(`the database did not answer within ${Math.round(limit / 1000)} s`, 'KEEL_TIMEOUT')
    }
    if (Atomics.wait(signal, 0, before, limit) === 'timed-out') throw timedOut()
    // The counter moved, so an answer was posted; on a loaded machine the port has been seen not to hold it yet (the
    // gate's 20-process test, once): looked for again every millisecond until the deadline, never taken as missing.
    let received = this.receive(this.port!)
    while (!received) {
      if (Date.now() >= deadline) throw timedOut()
      Atomics.wait(signal, 0, Atomics.load(signal, 0), 1)
      received = this.receive(this.port!)
    }
    const reply = received.message as { ok: true; value: T } | { ok: false; message: string; code?: string }
    if (!reply.ok) throw new PgCallError(reply.message, reply.code)
    return reply.value
  }

  /** Starts listening on `keel_events` and `keel_asks` (a connection of its own); each notice goes to `handler`. */
  listen(handler: (notice: PgNotice) => void): void {
    this.onNotice = handler
    this.call({ kind: 'listen' })
  }

  /** Ends the connection (releasing its locks) and the worker. */
  close(): void {
    this.onNotice = undefined
    if (!this.worker) return
    try {
      this.call({ kind: 'end' })
    } catch {}
    this.stop()
  }

  private stop(): void {
    void this.worker?.terminate()
    this.port?.close()
    this.notices?.close()
    this.worker = undefined
    this.port = undefined
    this.notices = undefined
  }
}
