// Runs tests/fixtures/writer.ts in a child process (bundled once: test-support/bundled-fixture.ts) and follows what it
// prints.
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { bundledFixture } from '../../../test-support/bundled-fixture.ts'

const writer = fileURLToPath(new URL('./fixtures/writer.ts', import.meta.url))
const root = fileURLToPath(new URL('../../..', import.meta.url))

export interface Writer {
  child: ChildProcess
  lines: string[]
  /** Resolves with the first printed line that starts with `prefix`. */
  waitFor(prefix: string, timeoutMs?: number): Promise<string>
  /** Resolves when the process has exited, with its signal. */
  exited: Promise<NodeJS.Signals | null>
  stderr(): string
}

export function startWriter(mode: 'crash' | 'hold', id: string, cwd: string, env: Record<string, string> = {}): Writer {
  const child = spawn(process.execPath, [bundledFixture(writer), mode, id, cwd], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  let stderr = ''
  let buffered = ''
  const waiters: { prefix: string; resolve: (line: string) => void }[] = []
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      lines.push(line)
      for (const waiter of waiters.splice(0)) {
        if (line.startsWith(waiter.prefix)) waiter.resolve(line)
        else waiters.push(waiter)
      }
    }
  })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_, signal) => resolve(signal)))
  return {
    child,
    lines,
    exited,
    stderr: () => stderr,
    waitFor(prefix, timeoutMs = 15_000) {
      const seen = lines.find((line) => line.startsWith(prefix))
      if (seen) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`writer printed no "${prefix}" line in ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        )
        exited.then(() =>
          setTimeout(() => reject(new Error(`writer exited before printing "${prefix}"; stderr: ${stderr}`)), 50),
        )
        waiters.push({
          prefix,
          resolve: (line) => {
            clearTimeout(timer)
            resolve(line)
          },
        })
      })
    },
  }
}
