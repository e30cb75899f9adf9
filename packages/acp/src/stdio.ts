import { Readable } from 'node:stream'
import { ndJsonStream } from '@agentclientprotocol/sdk'
import type { DoorContext } from '@keel/door'
import { AcpBridge } from './bridge.ts'
import { planEnabled } from './config.ts'
import { guardStdout } from './guard.ts'
import { limitLines, MAX_MESSAGE_BYTES, type RefusedMessage } from './limit.ts'

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/**
 * `keel acp`: serves one ACP connection on stdin/stdout until the client closes stdin or a signal arrives, then
 * cancels running turns (killing their commands) and closes the sessions. Diagnostics go to stderr.
 */
export async function runStdio(door: DoorContext): Promise<number> {
  const guard = guardStdout(process.stdout, process.stderr)
  const log = (line: string) => process.stderr.write(`keel acp: ${line}\n`)
  const bridge = new AcpBridge(door.ctx, {
    model: () => door.ctx.llm.create(door.modelSpec, { baseUrl: door.flags['base-url'], cwd: door.cwd }),
    plan: planEnabled(door.ctx),
    version: door.version,
    log,
  })
  // The SDK and the size limit both answer on stdout; one writer keeps their lines whole and in order.
  const writer = guard.protocol.getWriter()
  const output = new WritableStream<Uint8Array>({ write: (chunk) => writer.write(chunk) })
  const refuse = (message: RefusedMessage) => {
    log(
      `refused a message of ${message.bytes} bytes${message.method ? ` (${message.method})` : ''}: the limit is ${MAX_MESSAGE_BYTES} bytes`,
    )
    // A notification gets no answer; a message without a readable id is answered with id null, like a parse error.
    if (message.id === undefined && message.method !== undefined) return
    const error = {
      code: -32600,
      message: `message too large: ${message.bytes} bytes (keel acp accepts at most ${MAX_MESSAGE_BYTES} bytes per message)`,
      data: { maxMessageBytes: MAX_MESSAGE_BYTES },
    }
    writer
      .write(new TextEncoder().encode(`${JSON.stringify({ jsonrpc: '2.0', id: message.id ?? null, error })}\n`))
      .catch(() => {})
  }
  const input = limitLines(
    Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    MAX_MESSAGE_BYTES,
    refuse,
  )
  const connection = bridge.app.connect(ndJsonStream(output, input, { maxMessageBytes: MAX_MESSAGE_BYTES }))
  const stop = () => connection.close()
  for (const signal of SIGNALS) process.on(signal, stop)
  try {
    let failed = false
    await connection.closed.catch((error: unknown) => {
      failed = true
      log(`connection closed: ${error instanceof Error ? error.message : String(error)}`)
    })
    await bridge.close()
    return failed ? 1 : 0
  } finally {
    for (const signal of SIGNALS) process.off(signal, stop)
    process.stdin.destroy()
    guard.release()
  }
}
