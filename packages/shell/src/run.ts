import { type ChildProcess, spawn } from 'node:child_process'
import { StringDecoder } from 'node:string_decoder'
import type { Readable } from 'node:stream'
import { killCall, newMarkerVariable, track, type CallMark } from './reap.ts'

export interface RunOptions {
  /** What to spawn: `bash -c <command>`, or what a sandbox wrapped it into. */
  file: string
  args: string[]
  cwd: string
  /** The command's environment (default: Keel's own; the bash tool passes env.ts's policy). */
  env?: Record<string, string>
  timeoutMs: number
  signal: AbortSignal
  /** Decoded text as it arrives, stdout and stderr interleaved. */
  onText(text: string): void
  /** How long to keep reading after the shell exits before closing the pipes (a process may still hold them). */
  drainMs?: number
  /** On cancel, send SIGTERM to the group first and SIGKILL only after this long (a background job's kill). */
  termGraceMs?: number
  /**
   * Give the command a fourth pipe, fd 3, and hand what it wrote there (read until it closes, at most `drainMs` after
   * the shell exits): how a sandboxed shell reports what it left running, apart from its output.
   */
  onReport?(text: string): void
  /**
   * Whatever the command starts dies with it (a sandbox's PID namespace): when the shell exits nothing is looked for
   * in /proc. A timeout or cancel still kills what is there.
   */
  contained?: boolean
}

/**
 * A shell spawned before its command is known (a prepared sandbox's, see spares.ts): its stdin is a pipe, and the
 * command is written there when the call comes. Until then its output waits in its pipes.
 */
export interface PreparedShell {
  readonly child: ChildProcess
  readonly mark: CallMark | undefined
  /** Whether it exited before its command came: there is nothing left to run the command in. */
  exited(): boolean
  /** Kills what it started and resolves once it has exited (for a spare no command took). */
  kill(): Promise<void>
}

/** Spawns `file args` as runCommand would, its stdin a pipe, to wait for the command `runCommand` gives it. */
export function prepareShell(options: Pick<RunOptions, 'file' | 'args' | 'cwd' | 'env' | 'onReport'>): PreparedShell {
  const variable = newMarkerVariable()
  const child = spawn(options.file, options.args, {
    cwd: options.cwd,
    detached: true,
    stdio: options.onReport ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    env: { ...(options.env ?? process.env), [variable]: '1' },
  })
  const mark = child.pid === undefined ? undefined : { pgid: child.pid, variable, spawnedAt: Date.now() }
  const untrack = mark ? track(mark) : () => {}
  let gone = false
  const exit = new Promise<void>((done) => {
    child.on('exit', () => {
      gone = true
      done()
    })
    child.on('error', () => {
      if (child.pid === undefined) {
        gone = true
        done()
      }
    })
  })
  child.stdin?.on('error', () => {})
  void exit.then(untrack)
  return {
    child,
    mark,
    exited: () => gone || child.exitCode !== null || child.signalCode !== null,
    async kill() {
      if (mark && !gone)
        try {
          process.kill(-mark.pgid, 'SIGKILL')
        } catch {}
      for (const stream of child.stdio) stream?.destroy()
      // A process stuck in the kernel is not waited for past the grace a command's kill gets: a turn's end waits here.
      let timer: NodeJS.Timeout | undefined
      await Promise.race([exit, new Promise((done) => (timer = setTimeout(done, REAP_GRACE_MS)))])
      clearTimeout(timer)
    },
  }
}

export type RunOutcome =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null; leftovers: number | 'some'; seconds: number }
  | { kind: 'timeout'; seconds: number }
  | { kind: 'cancelled'; seconds: number }
  | { kind: 'spawn-error'; message: string }

/** After a kill, how long to wait for the shell to be reaped before giving up on it (a process stuck in the kernel). */
const REAP_GRACE_MS = 2000

/**
 * Runs one command in a process group of its own and resolves when the shell exits, never later than the timeout.
 * Whatever the command left running (background jobs, processes that escaped the group) is killed at that point,
 * and reading stops after a short drain even if something still holds the pipes open.
 */
export function runCommand(
  options: RunOptions,
  prepared?: { shell: PreparedShell; input: string },
): Promise<RunOutcome> {
  const started = Date.now()
  const seconds = () => (Date.now() - started) / 1000
  const variable = newMarkerVariable()
  return new Promise((resolve) => {
    let child: ChildProcess
    let mark: CallMark | undefined
    let untrack = () => {}
    if (prepared) {
      // Tracked since it was spawned (prepareShell), and untracked once it exits.
      ;({ child, mark } = prepared.shell)
      child.stdin?.end(prepared.input)
    } else {
      try {
        child = spawn(options.file, options.args, {
          cwd: options.cwd,
          detached: true,
          stdio: options.onReport ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
          env: { ...(options.env ?? process.env), [variable]: '1' },
        })
      } catch (error) {
        resolve({ kind: 'spawn-error', message: (error as Error).message })
        return
      }
      if (child.pid !== undefined) {
        mark = { pgid: child.pid, variable, spawnedAt: started }
        untrack = track(mark)
      }
    }
    let ending: 'timeout' | 'cancelled' | undefined
    let settled = false
    let graceTimer: NodeJS.Timeout | undefined

    const report = options.onReport ? (child.stdio[3] as Readable | null) : null
    let reported: Promise<void> = Promise.resolve()
    if (report) {
      report.setEncoding('utf8')
      report.on('data', (text: string) => options.onReport?.(text))
      report.on('error', () => {})
      reported = new Promise((done) => report.on('close', () => done()))
    }
    const streams = [child.stdout!, child.stderr!]
    const decoders = streams.map(() => new StringDecoder('utf8'))
    const open = new Set<Readable>(streams)
    let onDrained: (() => void) | undefined
    streams.forEach((stream, i) => {
      stream.on('data', (chunk: Buffer) => {
        const text = decoders[i]!.write(chunk)
        if (text) options.onText(text)
      })
      stream.on('close', () => {
        if (!open.delete(stream)) return
        const rest = decoders[i]!.end()
        if (rest) options.onText(rest)
        if (!open.size) onDrained?.()
      })
      stream.on('error', () => {})
    })

    const finish = (outcome: RunOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      clearTimeout(graceTimer)
      options.signal.removeEventListener('abort', onAbort)
      untrack()
      resolve(outcome)
    }

    /** Reads until the pipes close, at most `drainMs`, then stops reading whatever still holds them open. */
    const drain = async (): Promise<void> => {
      if (!open.size) return
      await new Promise<void>((done) => {
        const stop = setTimeout(done, options.drainMs ?? 200)
        onDrained = () => {
          clearTimeout(stop)
          done()
        }
      })
      for (const stream of [...open]) stream.destroy()
      open.clear()
    }

    const kill = (why: 'timeout' | 'cancelled') => {
      if (ending || settled) return
      ending = why
      const grace = why === 'cancelled' ? (options.termGraceMs ?? 0) : 0
      if (grace > 0 && mark) {
        try {
          process.kill(-mark.pgid, 'SIGTERM')
        } catch {}
        // The group got its chance to exit cleanly; whatever still runs after the grace is killed outright.
        graceTimer = setTimeout(() => {
          if (mark) void killCall(mark)
          graceTimer = setTimeout(
            () => void drain().then(() => finish({ kind: why, seconds: seconds() })),
            REAP_GRACE_MS,
          )
        }, grace)
        return
      }
      if (mark) void killCall(mark)
      // The shell normally dies at once; if it cannot be reaped, answer anyway rather than hang the turn.
      graceTimer = setTimeout(() => {
        if (mark) void killCall(mark)
        void drain().then(() => finish({ kind: why, seconds: seconds() }))
      }, REAP_GRACE_MS)
    }
    const timer = setTimeout(() => kill('timeout'), options.timeoutMs)
    const onAbort = () => kill('cancelled')
    if (options.signal.aborted) onAbort()
    else options.signal.addEventListener('abort', onAbort, { once: true })

    child.on('error', (error) => {
      // Spawning failed (no such binary, no such cwd): there is no process, so no exit event follows.
      if (child.pid === undefined) finish({ kind: 'spawn-error', message: error.message })
    })
    child.on('exit', async (code, signal) => {
      const elapsed = seconds()
      // The shell is gone; anything of the call still alive was left behind by it.
      const leftovers = mark && !options.contained ? await killCall(mark) : 0
      await drain()
      if (report) {
        let stop: NodeJS.Timeout | undefined
        await Promise.race([reported, new Promise<void>((done) => (stop = setTimeout(done, options.drainMs ?? 200)))])
        clearTimeout(stop)
        report.destroy()
      }
      if (ending) finish({ kind: ending, seconds: elapsed })
      else finish({ kind: 'exited', code, signal, leftovers, seconds: elapsed })
    })
  })
}
