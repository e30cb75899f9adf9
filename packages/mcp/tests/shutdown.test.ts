// Stopping stdio servers that are slow to leave: closing a connection resolves only once the server's process (and
// a launcher's child) is gone, and a server that exits at the end of its stdin is left to do so.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { alive, killQuietly } from '../../../test-support/processes.ts'
import { run } from '../../../test-support/run.ts'
import { Connection } from '../src/connection.ts'
import { STOP_TIMING } from '../src/stop.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-mcp-stop-'))
const started: number[] = []
afterEach(() => killQuietly(started.splice(0)))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let files = 0
function stubborn(mode: string) {
  const pidFile = join(scratch, `pids-${++files}`)
  writeFileSync(pidFile, '')
  const config = {
    command: process.execPath,
    args: [join(import.meta.dirname, 'fixtures/stubborn-server.mjs'), mode],
    env: { PID_FILE: pidFile },
  }
  const notes = () =>
    readFileSync(pidFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ') as [string, string])
  const pids = () => {
    const found = [...new Set(notes().map(([pid]) => Number(pid)))]
    started.push(...found)
    return found
  }
  return { config, pidFile, notes, pids }
}

async function connected(config: ReturnType<typeof stubborn>['config']): Promise<Connection> {
  const connection = new Connection('stubborn', config, {
    startTimeoutMs: 20_000,
    callTimeoutMs: 20_000,
    clientVersion: 'test',
    cwd: scratch,
    onTools() {},
    onDropped() {},
    onClosed() {},
  })
  await connection.start()
  expect(connection.state, connection.error).toBe('ready')
  return connection
}

describe('closing a stdio server', () => {
  test.each([
    ['ignores the end of its stdin', 'ignore'],
    ['ignores SIGTERM too', 'deaf'],
    ['runs behind a launcher that dies first (npx, sh -c)', 'wrapper'],
  ])('that %s: gone, with all its processes, when close resolves', async (_, mode) => {
    const server = stubborn(mode)
    const connection = await connected(server.config)
    const pids = server.pids()
    expect(pids.length).toBe(mode === 'wrapper' ? 2 : 1)
    expect(pids.every(alive)).toBe(true)
    await connection.close()
    expect(pids.filter(alive)).toEqual([])
  })

  test('that exits at the end of its stdin: it does, on its own, and is not signalled first', async () => {
    // A long grace, so that a loaded machine cannot turn this into a race: a server signalled at once fails it.
    const { exitMs } = STOP_TIMING
    STOP_TIMING.exitMs = 30_000
    try {
      const server = stubborn('eof')
      const connection = await connected(server.config)
      const [pid] = server.pids()
      await connection.close()
      expect(alive(pid!)).toBe(false)
      expect(server.notes().map(([, what]) => what)).toEqual(['eof', 'eof-exit'])
    } finally {
      STOP_TIMING.exitMs = exitMs
    }
  })
})

describe('keel with a stdio server that ignores the end of its stdin', () => {
  test('keel mcp list exits and leaves none of its processes running', async () => {
    const server = stubborn('wrapper')
    const cwd = mkdtempSync(join(scratch, 'project-'))
    mkdirSync(join(cwd, '.git'))
    writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: { stubborn: server.config } }))
    const listed = await run(process.execPath, [join(root, 'bin/keel.js'), 'mcp', 'list', '--trust'], {
      cwd,
      env: { ...process.env, KEEL_HOME: join(scratch, 'home') },
    })
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.stdout).toContain('stubborn  ready  stdio')
    const pids = server.pids()
    expect(pids.length).toBe(2)
    expect(pids.filter(alive)).toEqual([])
  })
})
