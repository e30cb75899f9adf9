// Through the real CLI: `keel -p` with a scripted model that asks grep for a catastrophic pattern ends the turn with
// grep's time-limit error instead of hanging, and SIGINT during such a grep cancels the turn.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-fs-cli-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const grepBomb = { toolCalls: [{ name: 'grep', arguments: { pattern: '(a+)+$' } }] }

function setup(name: string, timeoutMs: number) {
  const cwd = join(scratch, name)
  const home = join(scratch, `${name}-home`)
  const shipped = readFileSync(join(root, 'packages/cli/keel.yml'), 'utf8')
  const config = shipped.replace(
    '    allowOutsideCwd: false\n',
    // Keel's own search hands the worker whole files; through ripgrep this line is not even a candidate for (a+)+$.
    `    allowOutsideCwd: false\n    timeoutMs: ${timeoutMs}\n    ripgrep: ''\n`,
  )
  expect(config).not.toBe(shipped)
  const files = mkdtempSync(join(scratch, `${name}-`))
  writeFileSync(join(files, 'keel.yml'), config)
  writeFileSync(join(files, 'script.json'), JSON.stringify({ steps: [grepBomb, { text: 'Finished.' }] }))
  mkdirSync(cwd, { recursive: true })
  return { cwd, home, config: join(files, 'keel.yml'), model: `scripted/${join(files, 'script.json')}` }
}

function keel(args: string[], cwd: string, home: string) {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home },
    // stdin as a CI job has it: an open pipe that never writes costs `-p` its 2 s wait for piped text.
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => {
    stdout += d
  })
  child.stderr.on('data', (d) => {
    stderr += d
  })
  const closed = new Promise<number | null>((done) => child.on('close', done))
  return { child, closed, out: () => stdout, err: () => stderr }
}

function logOf(home: string): { type: string; data: Record<string, unknown> }[] {
  const dir = join(home, 'sessions')
  const project = join(dir, readdirSync(dir)[0]!)
  const file = readdirSync(project).find((f) => f.endsWith('.jsonl'))!
  return readFileSync(join(project, file), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
}

describe('keel -p and a catastrophic grep', () => {
  test("the turn gets grep's time-limit error and goes on", async () => {
    const { cwd, home, config, model } = setup('timeout', 1500)
    writeFileSync(join(cwd, 'bomb.txt'), `${'a'.repeat(60)}!\n`)
    const run = keel(['-p', 'search', '--model', model, '--config', config], cwd, home)
    expect(await run.closed, run.err()).toBe(0)
    expect(run.out()).toBe('Finished.\n')
    expect(run.err()).toContain('  Error: grep ran out of time: stopped after 1.5 s (config timeoutMs)')
    const result = logOf(home).find((event) => event.type === 'tool/result')!
    expect(result.data.isError).toBe(true)
  }, 90_000)

  test('SIGINT during the grep cancels the turn', async () => {
    const { cwd, home, config, model } = setup('sigint', 600_000)
    writeFileSync(join(cwd, 'bomb.txt'), `${'a'.repeat(60)}!\n`)
    const run = keel(['-p', 'search', '--model', model, '--config', config], cwd, home)
    // Wait until the grep has started (print mode names each tool call on stderr), then interrupt it.
    await new Promise<void>((started) => {
      const check = () => {
        if (run.err().includes('→ Grep /(a+)+$/')) started()
      }
      run.child.stderr.on('data', check)
      check()
    })
    run.child.kill('SIGINT')
    expect(await run.closed, run.err()).toBe(130)
    expect(run.err()).toContain('keel: the turn was cancelled')
    const events = logOf(home)
    expect(events.find((event) => event.type === 'tool/result')!.data.isError).toBe(true)
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  }, 90_000)
})
