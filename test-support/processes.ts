// Processes from tests: running one without blocking the test process, and observing them: is a pid still running
// (a zombie counts as gone: it has exited and only waits for its parent, which in a container may be an init that
// reaps late).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { waitFor } from './harness.ts'

export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
  }
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Pids a command printed, one per line (lines of digits only). */
export function pidsIn(text: string): number[] {
  return text
    .split('\n')
    .filter((line) => /^\d+$/.test(line.trim()))
    .map((line) => Number(line.trim()))
}

export async function waitUntilGone(pids: readonly number[], timeoutMs = 10_000): Promise<void> {
  await waitFor(() => pids.every((pid) => !alive(pid)), `processes ${pids.join(', ')} to end`, timeoutMs)
}

/** Kills what a test started and may have left behind, so a failing test does not leak sleepers. */
export function killQuietly(pids: readonly number[]): void {
  for (const pid of pids)
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
}

export interface Ran {
  status: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  cwd?: string
  env?: NodeJS.ProcessEnv
  /** Written to a stdin pipe, which is then closed (default: closed at once). */
  input?: string
  /** stdin is this descriptor (a file opened for `cmd < file`) instead of a pipe. */
  stdin?: number
  /** Killed with SIGTERM past this many milliseconds, as spawnSync's `timeout`. */
  timeout?: number
}

/**
 * spawnSync's result, without blocking the test process: the tests of a file can run their processes side by side,
 * and a server the test holds (a fake provider) keeps answering while the child runs.
 */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.stdin ?? 'pipe', 'pipe', 'pipe'],
      timeout: options.timeout,
    })
    let stdout = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.stdin?.on('error', () => {}) // a child that exits before reading its input
    child.stdin?.end(options.input ?? '')
    child.once('error', fail)
    child.once('close', (status, signal) => done({ status, signal, stdout, stderr }))
  })
}
