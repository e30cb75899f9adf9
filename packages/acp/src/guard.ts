/**
 * While `keel acp` runs, stdout belongs to the protocol. Everything else that writes to `stdout.write` (console.log,
 * the cordis logger, a chatty plugin) is sent to stderr instead; only the returned `protocol` stream reaches the real
 * stdout. `release()` puts `stdout.write` back.
 */
export interface StdoutGuard {
  protocol: WritableStream<Uint8Array>
  release(): void
}

type Write = NodeJS.WritableStream['write']

export function guardStdout(stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): StdoutGuard {
  const original = stdout.write
  const writeBytes = original as (chunk: Uint8Array, done: (error?: Error | null) => void) => boolean
  const toStderr = ((...args: Parameters<Write>) =>
    (stderr.write as (...a: Parameters<Write>) => boolean)(...args)) as Write
  stdout.write = toStderr
  // A client that goes away mid-write must not crash the process with EPIPE; the connection closes on its own.
  const ignore = () => {}
  stdout.on('error', ignore)
  const protocol = new WritableStream<Uint8Array>({
    write: (chunk) =>
      new Promise<void>((done, fail) => {
        writeBytes.call(stdout, chunk, (error) => (error ? fail(error) : done()))
      }),
  })
  return {
    protocol,
    release() {
      if (stdout.write === toStderr) stdout.write = original
      stdout.off('error', ignore)
    },
  }
}
