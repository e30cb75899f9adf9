import { Readable } from 'node:stream'
import { ndJsonStream } from '@agentclientprotocol/sdk'
import type { DoorContext } from '@keel/cli'
import { AcpBridge } from './bridge.ts'
import { planEnabled } from './config.ts'
import { guardStdout } from './guard.ts'

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
  const input = Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>
  const connection = bridge.app.connect(ndJsonStream(guard.protocol, input))
  const stop = () => connection.close()
  for (const signal of SIGNALS) process.on(signal, stop)
  try {
    await connection.closed.catch((error: unknown) => log(`connection closed: ${error instanceof Error ? error.message : String(error)}`))
    await bridge.close()
    return 0
  } finally {
    for (const signal of SIGNALS) process.off(signal, stop)
    process.stdin.destroy()
    guard.release()
  }
}
