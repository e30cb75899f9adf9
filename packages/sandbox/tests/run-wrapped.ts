// Runs a wrapped command to its end, for the tests that drive `ctx.sandbox.wrap` themselves.
import type { WrappedCommand } from '@keel/sandbox'
import { runCommand } from '@keel/shell'

/** Spawns `wrapped` in `cwd`, disposes it afterwards; its exit code (undefined if it did not exit) and output. */
export async function runWrapped(
  wrapped: WrappedCommand,
  cwd: string,
  timeoutMs = 30_000,
): Promise<{ code: number | undefined; text: string }> {
  let text = ''
  try {
    const outcome = await runCommand({
      file: wrapped.file,
      args: wrapped.args,
      cwd,
      timeoutMs,
      signal: new AbortController().signal,
      onText(chunk) {
        text += chunk
      },
      contained: wrapped.contained,
    })
    return { code: outcome.kind === 'exited' ? (outcome.code ?? undefined) : undefined, text }
  } finally {
    await wrapped.dispose()
  }
}
