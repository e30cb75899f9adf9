// Ways print mode is stopped from outside: a signal (a CI timeout, a closed terminal) or a reader that closes stdout.
// Each must kill the commands the turn started and leave the turn closed on the log.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { waitFor } from '../../../test-support/harness.ts'
import { alive, killQuietly, pidsIn, waitUntilGone } from '../../../test-support/processes.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-stop-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let leftovers: number[] = []
afterEach(() => {
  killQuietly(leftovers)
  leftovers = []
})

let counter = 0
function setup(steps: unknown[]) {
  const dir = join(scratch, `run-${++counter}`)
  mkdirSync(join(dir, 'cwd'), { recursive: true })
  const script = join(dir, 'script.json')
  writeFileSync(script, JSON.stringify({ steps }))
  return { home: join(dir, 'home'), cwd: join(dir, 'cwd'), model: `scripted/${script}` }
}

function keel(args: string[], run: { home: string; cwd: string }): ChildProcess & { err(): string } {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    // Unsandboxed (yolo), so the pids the commands write are the host's: a sandbox has its own pid namespace.
    cwd: run.cwd,
    env: { ...process.env, KEEL_HOME: run.home, KEEL_MODE: 'yolo' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let err = ''
  child.stderr!.on('data', (chunk) => {
    err += chunk
  })
  return Object.assign(child, { err: () => err })
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode)
    else child.once('exit', (code) => done(code))
  })
}

/** The one session file of a KEEL_HOME, parsed. */
function sessionEvents(home: string): { type: string; data: Record<string, unknown> }[] {
  const sessions = join(home, 'sessions')
  const dir = join(sessions, readdirSync(sessions)[0]!)
  const file = readdirSync(dir).find((name) => name.endsWith('.jsonl'))!
  return readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line))
}

function textOf(data: Record<string, unknown>): string {
  return (data.content as { text?: string }[]).map((block) => block.text ?? '').join('')
}

// Two sleepers a plain kill of the shell would leave running: one in the shell's group, one that left it.
const SLEEPERS = "sleep 300 & echo $! > pids; setsid sh -c 'echo $$ >> pids; exec sleep 300' & wait"

async function sleepersOf(cwd: string): Promise<number[]> {
  const file = join(cwd, 'pids')
  await waitFor(
    () => existsSync(file) && pidsIn(readFileSync(file, 'utf8')).length === 2,
    'the sleepers to start',
    20_000,
  )
  const pids = pidsIn(readFileSync(file, 'utf8'))
  leftovers.push(...pids)
  return pids
}

describe('keel -p stopped by a signal', () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    test(`${signal}: the commands are killed, the turn is closed as aborted, exit ${code}`, async () => {
      const run = setup([
        { toolCalls: [{ name: 'bash', arguments: { command: SLEEPERS } }] },
        { text: 'never reached' },
      ])
      const child = keel(['-p', 'sleep', '--model', run.model], run)
      const pids = await sleepersOf(run.cwd)
      expect(pids.every(alive)).toBe(true)
      child.kill(signal)
      expect(await exitOf(child), child.err()).toBe(code)
      await waitUntilGone(pids)
      const events = sessionEvents(run.home)
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
      const results = events.filter((event) => event.type === 'tool/result')
      expect(results.map((event) => textOf(event.data))).toEqual(['[cancelled by the user]'])
      expect(child.err()).not.toMatch(/\n\s+at /)
    })
  }
})

describe('keel -p with stdout closed early (keel -p … | head -1)', () => {
  test('ends quietly with exit 141: no stack trace, commands killed, the turn closed on the log', async () => {
    const run = setup([
      {
        text: 'first line\n',
        toolCalls: [{ name: 'bash', arguments: { command: 'until [ -e go ]; do sleep 0.02; done' } }],
      },
      { text: 'second line\n', toolCalls: [{ name: 'bash', arguments: { command: SLEEPERS } }] },
      { text: 'third line\n' },
    ])
    // stream-json writes as the turn goes (text mode writes only the answer, at the end).
    const child = keel(['-p', 'talk', '--model', run.model, '--output-format', 'stream-json'], run)
    let out = ''
    await new Promise<void>((done) =>
      child.stdout!.on('data', (chunk) => {
        out += chunk
        if (out.includes('\n')) done()
      }),
    )
    expect(JSON.parse(out.split('\n')[0]!)).toMatchObject({ type: 'system/init' })
    // Close the reading end, as `head -1` does after its line, then let the script go on writing.
    child.stdout!.destroy()
    writeFileSync(join(run.cwd, 'go'), '')
    expect(await exitOf(child), child.err()).toBe(141)
    expect(child.err()).not.toMatch(/EPIPE|\n\s+at /)
    expect(child.err()).toContain('keel: stdout was closed; the turn was cancelled\n')
    const events = sessionEvents(run.home)
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    const calls = events.filter((event) => event.type === 'tool/call').length
    expect(events.filter((event) => event.type === 'tool/result')).toHaveLength(calls)
    if (existsSync(join(run.cwd, 'pids'))) await waitUntilGone(pidsIn(readFileSync(join(run.cwd, 'pids'), 'utf8')))
  })
})
