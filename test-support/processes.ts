// Observing processes from tests: is a pid still running (a zombie counts as gone: it has exited and only waits
// for its parent, which in a container may be an init that reaps late).
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
