import { spawn } from 'node:child_process'

// Runs one hook command the way claude-code does: `sh -c`, the event as JSON on stdin, the exit code and the output
// read back. Bounded: a hook is killed (its whole process group) at its timeout or when the turn is cancelled, and
// its output is cut at OUTPUT_LIMIT; a cut or non-JSON stdout is read as a plain exit code.

/** Per stream; a hook printing megabytes is cut here. */
const OUTPUT_LIMIT = 64 * 1024

export interface HookOutcome {
  /** null when it was killed (timeout, cancel) or could not start. */
  exit: number | null
  stdout: string
  stderr: string
  timedOut: boolean
  /** Output went over OUTPUT_LIMIT and was cut. */
  cut: boolean
  ms: number
}

export function runHook(
  command: string,
  input: object,
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; signal?: AbortSignal },
): Promise<HookOutcome> {
  const started = Date.now()
  return new Promise((resolve) => {
    const out: Buffer[] = []
    const err: Buffer[] = []
    const sizes = [0, 0]
    let cut = false
    let timedOut = false
    let settled = false
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    })
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL')
      } catch {}
    }
    const timer = setTimeout(() => {
      timedOut = true
      kill()
    }, options.timeoutMs)
    const onAbort = () => kill()
    options.signal?.addEventListener('abort', onAbort, { once: true })
    const collect = (chunks: Buffer[], index: 0 | 1) => (chunk: Buffer) => {
      const room = OUTPUT_LIMIT - sizes[index]!
      if (room <= 0) {
        cut = true
        return
      }
      if (chunk.length > room) cut = true
      chunks.push(chunk.subarray(0, room))
      sizes[index] = sizes[index]! + Math.min(room, chunk.length)
    }
    child.stdout.on('data', collect(out, 0))
    child.stderr.on('data', collect(err, 1))
    // A hook that never reads its stdin must not fail the write.
    child.stdin.on('error', () => {})
    child.stdin.end(`${JSON.stringify(input)}\n`)
    const finish = (exit: number | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      resolve({
        exit: timedOut || options.signal?.aborted ? null : exit,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        timedOut,
        cut,
        ms: Date.now() - started,
      })
    }
    child.on('error', (error) => {
      err.push(Buffer.from(error.message))
      finish(null)
    })
    // The shell may have left children holding the pipes: they go with it, then the pipes close.
    child.on('exit', () => kill())
    child.on('close', (code) => finish(code))
  })
}
