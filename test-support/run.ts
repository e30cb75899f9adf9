// Running a process from a test without blocking it. Apart from processes.ts, which loads all of Keel (through
// harness.ts) for its waits: a file that only runs the binary should not pay for that.
import { spawn } from 'node:child_process'

interface Ran {
  status: number | null
  stdout: string
  stderr: string
}

/**
 * spawnSync's result, without blocking the test process: the tests of a file can run their processes side by side,
 * and a server the test holds (a fake provider) keeps answering while the child runs. `input` is written to stdin,
 * which is then closed (at once without it).
 */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.stdin.on('error', () => {}) // a child that exits before reading its input
    child.stdin.end(options.input ?? '')
    child.once('error', fail)
    child.once('close', (status) => done({ status, stdout, stderr }))
  })
}
