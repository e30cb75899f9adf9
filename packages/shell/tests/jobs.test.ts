import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as checkpointPlugin from '@keel/checkpoint'
import { performRewind, previewRewind } from '@keel/checkpoint'
import * as shellPlugin from '@keel/shell'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

/** Live processes whose command line holds `marker` (every process of a job here carries one). */
function pidsWith(marker: string): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8')
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (cmdline.includes(marker) && !/\) [ZX] /.test(stat)) out.push(Number(name))
    } catch {}
  }
  return out
}

async function goneAll(marker: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (pidsWith(marker).length && Date.now() < until) await new Promise((done) => setTimeout(done, 50))
  expect(pidsWith(marker)).toEqual([])
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const port = (server.address() as { port: number }).port
  await new Promise((done) => server.close(done))
  return port
}

/** A `node -e` HTTP server on 127.0.0.1, with a marker in its command line; it answers `hello <marker>`. */
function serverCommand(port: number, marker: string): string {
  return `node -e "require('http').createServer((q, r) => r.end('hello ' + process.argv[1])).listen(${port}, '127.0.0.1', () => console.log('listening'))" ${marker}`
}
const curl = (port: number) =>
  `for i in $(seq 100); do curl -s http://127.0.0.1:${port}/ && exit 0; sleep 0.1; done; exit 1`

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] })

function results(_keel: Keel, agent: ReturnType<Keel['agent']>): string[] {
  return agent.session.events.flatMap((e) => (e.type === 'tool/result' ? [textOfContent(e.data.content)] : []))
}

describe('background jobs through the real loop', () => {
  test('start a server, curl it in a later step, read its output, kill it: nothing is left', async () => {
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    const port = await freePort()
    keel = await makeKeel({
      steps: [
        call('bash', { command: serverCommand(port, marker), background: true }),
        call('bash', { command: curl(port) }),
        // The server said `listening` before curl got its answer: nothing new to wait for.
        call('job_output', { id: 'job-1' }),
        call('job_kill', { id: 'job-1' }),
        call('job_output', { id: 'job-1' }),
        { text: 'done' },
      ],
    })
    const agent = keel.agent()
    const result = await agent.prompt('serve and check')
    expect(result.reason).toBe('completed')
    const texts = results(keel, agent)
    expect(texts[0]).toMatch(/^Started background job job-1\./)
    expect(texts[1]).toContain(`hello ${marker}`)
    expect(texts[2]).toMatch(/^listening\n\[job-1 is still running\]$/)
    expect(texts[3]).toMatch(/^job-1 stopped \[ended: killed/)
    // The job's end was read with the kill: the id is gone, and the error names what is left (nothing).
    expect(texts[4]).toMatch(/^Error: no background job job-1; this session has no background jobs/)
    expect(pidsWith(marker)).toEqual([])
    const types = agent.session.events.map((e) => e.type)
    expect(types.filter((t) => t.startsWith('job/'))).toEqual(['job/start', 'job/kill', 'job/exit'])
    expect(agent.session.events.find((e) => e.type === 'job/kill')?.data).toEqual({ id: 'job-1', why: 'job_kill' })
  })

  test('a job still running when the session ends is killed, and its exit is logged after the turn', async () => {
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    keel = await makeKeel({
      steps: [call('bash', { command: `sleep 300; echo ${marker}`, background: true }), { text: 'left running' }],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    expect(pidsWith(marker).length).toBeGreaterThan(0)
    await keel.dispose()
    keel = undefined
    await goneAll(marker)
  })

  test('a rewind of the session kills its running jobs (the checkpoint plugin, through performRewind)', async () => {
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    keel = await makeKeel({
      steps: [
        call('bash', { command: 'echo one > f.txt' }),
        { text: 'first' },
        call('bash', { command: `sleep 300; echo ${marker}`, background: true }),
        { text: 'left running' },
      ],
      plugins: [[checkpointPlugin, { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }]],
    })
    const agent = keel.agent()
    await agent.prompt('make f')
    await agent.prompt('start a job')
    expect(pidsWith(marker).length).toBeGreaterThan(0)
    const source = { id: agent.id, cwd: keel.cwd, events: agent.session.events }
    const preview = await previewRewind(keel.ctx.checkpoints, source, { kind: 'turn', toTurn: 2, scope: 'files' })
    await performRewind({ checkpoints: keel.ctx.checkpoints, sessions: keel.ctx.sessions }, preview, {
      session: agent.session,
    })
    await goneAll(marker)
    expect(agent.session.events.find((e) => e.type === 'job/kill')?.data).toEqual({ id: 'job-1', why: 'rewind' })
  })

  test('an unknown id, and one job too many, are errors naming the live jobs', async () => {
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    const sleeper = { command: `sleep 300 # ${marker}`, background: true }
    keel = await makeKeel({
      steps: [
        call('bash', sleeper),
        call('bash', sleeper),
        call('bash', sleeper),
        call('bash', sleeper),
        call('bash', sleeper),
        call('job_output', { id: 'job-9' }),
        { text: 'ok' },
      ],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    const texts = results(keel, agent)
    expect(texts[4]).toMatch(
      /^Error: at most 4 background jobs may run at once \(shell\.maxJobs\); running: job-1 .*job-4 \(sleep 300/,
    )
    expect(texts[5]).toBe(
      "Error: no background job job-9; this session's jobs: job-1 (running), job-2 (running), job-3 (running), job-4 (running)",
    )
    await keel.dispose()
    keel = undefined
    await goneAll(marker)
  })

  test('a flooding job keeps only the newest output and counts what it dropped', async () => {
    keel = await makeKeel({
      steps: [
        call('bash', {
          command: 'head -c 2000000 /dev/zero | tr "\\0" x; echo; echo END; : > flooded',
          background: true,
        }),
        // Until the flood is all written; the read below then waits for the job's end.
        call('bash', { command: 'until [ -e flooded ]; do sleep 0.02; done' }),
        call('job_output', { id: 'job-1', wait_ms: 10000 }),
        { text: 'ok' },
      ],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    const all = results(keel, agent)[2]!
    const dropped = [...all.matchAll(/\[(\d+) characters of earlier output dropped\]/g)].map((m) => Number(m[1]))
    expect(dropped.length).toBeGreaterThan(0)
    expect(all).toContain('END')
    expect(all).toMatch(/\[ended: exit code 0/)
    expect(dropped[0]).toBeGreaterThan(1_900_000)
    expect(all.length).toBeLessThan(64_000 + 200)
  })

  test('a job that ignores SIGTERM is killed after the grace period', async () => {
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    keel = await makeKeel({
      // A grace period of 1 s instead of the default 3 s: the kill must still wait it out.
      shell: false,
      plugins: [[shellPlugin, { jobKillGrace: 1 }]],
      steps: [
        call('bash', {
          command: `node -e "process.on('SIGTERM', () => console.log('ignored')); console.log('up'); setInterval(() => {}, 1000)" ${marker}`,
          background: true,
        }),
        call('job_output', { id: 'job-1', wait_ms: 5000 }),
        call('job_kill', { id: 'job-1' }),
        { text: 'ok' },
      ],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    const texts = results(keel, agent)
    expect(texts[1]).toContain('up')
    expect(texts[2]).toMatch(/^job-1 stopped \[ended: killed · [1-9]\.\d s\]$/)
    expect(pidsWith(marker)).toEqual([])
  })
})

describe('keel -p', () => {
  test('exits without waiting on a running job, and leaves no process behind', async () => {
    const root = join(import.meta.dirname, '../../..')
    const dir = mkdtempSync(join(tmpdir(), 'keel-jobs-'))
    const marker = `keeljob${randomUUID().replaceAll('-', '')}`
    const port = await freePort()
    const script = join(dir, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          call('bash', { command: serverCommand(port, marker), background: true }),
          call('bash', { command: curl(port) }),
          { text: 'served' },
        ],
      }),
    )
    const env: Record<string, string | undefined> = { ...process.env, KEEL_HOME: join(dir, 'home') }
    delete env.KEEL_MODE
    delete env.KEEL_MODEL
    const started = Date.now()
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
      const child = spawn(
        process.execPath,
        [join(root, 'bin/keel.js'), '-p', 'go', '--mode', 'yolo', '--model', `scripted/${script}`],
        { cwd: dir, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
      )
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk) => (stdout += chunk))
      child.stderr.on('data', (chunk) => (stderr += chunk))
      child.on('close', (status) => done({ status, stdout, stderr }))
    })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toContain('served')
    expect(Date.now() - started).toBeLessThan(60_000)
    await goneAll(marker)
  }, 90_000)
})
