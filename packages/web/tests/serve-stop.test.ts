// `keel serve` stopped by a signal (SIGHUP: its terminal closed; SIGTERM: a service manager) while a turn runs a
// command: the command and what it started are killed and the turn is closed on the log.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { ensureClientBuilt } from '../src/build.ts'
import { waitFor } from '../../../test-support/harness.ts'
import { alive, killQuietly, pidsIn, waitUntilGone } from '../../../test-support/processes.ts'
import { exitOf, serve } from './serve-support.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-stop-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
beforeAll(async () => {
  await ensureClientBuilt()
}, 120_000)
let leftovers: number[] = []
afterEach(() => {
  killQuietly(leftovers)
  leftovers = []
})

const SLEEPERS = "sleep 300 & echo $! > pids; setsid sh -c 'echo $$ >> pids; exec sleep 300' & wait"

describe('keel serve stopped by a signal during a turn', () => {
  for (const signal of ['SIGHUP', 'SIGTERM'] as const) {
    test(`${signal}: commands killed, the turn closed as aborted`, async () => {
      const dir = join(scratch, signal)
      const cwd = join(dir, 'cwd')
      mkdirSync(cwd, { recursive: true })
      const script = join(dir, 'script.json')
      writeFileSync(
        script,
        JSON.stringify({
          steps: [{ toolCalls: [{ name: 'bash', arguments: { command: SLEEPERS } }] }, { text: 'never' }],
        }),
      )
      const home = join(dir, 'home')
      // yolo: no one answers an ask here, and unsandboxed the pids the commands record are the host's.
      const served = await serve(
        ['--port', '0', '--model', `scripted/${script}`, '--cwd', cwd],
        { KEEL_HOME: home, KEEL_MODE: 'yolo' },
        cwd,
      )
      try {
        const rpc = async (method: string, params: unknown) =>
          (await (
            await fetch(`${served.origin}/api/${method}`, {
              method: 'POST',
              body: JSON.stringify(params),
              headers: { authorization: `Bearer ${served.token}`, 'content-type': 'application/json' },
            })
          ).json()) as { ok: boolean; value: any }
        const created = await rpc('session.create', {})
        expect(created.ok).toBe(true)
        const id = created.value.session.id as string
        expect((await rpc('session.prompt', { sessionId: id, text: 'sleep' })).ok).toBe(true)
        const file = join(cwd, 'pids')
        await waitFor(
          () => existsSync(file) && pidsIn(readFileSync(file, 'utf8')).length === 2,
          'the sleepers to start',
          20_000,
        )
        const pids = pidsIn(readFileSync(file, 'utf8'))
        leftovers.push(...pids)
        expect(pids.every(alive)).toBe(true)
        served.child.kill(signal)
        await exitOf(served.child)
        await waitUntilGone(pids)
        const sessions = join(home, 'sessions')
        const log = join(sessions, readdirSync(sessions)[0]!, `${id}.jsonl`)
        const events = readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .slice(1)
          .map((line) => JSON.parse(line))
        expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
        expect(events.filter((event) => event.type === 'tool/result')).toHaveLength(1)
      } finally {
        if (served.child.exitCode === null) served.child.kill('SIGKILL')
      }
    })
  }
})
