// `keel` over PostgreSQL end to end: KEEL_STORE and `store` in the settings pick the database; resume, `-c`,
// sessions list/show/search read from it; a project's `store` waits for trust; the password is never printed.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the PostgreSQL session store')
const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-pg-cli-'))
let server: PostgresServer

beforeAll(async () => {
  if (!skip) server = await startPostgres()
}, 60_000)
afterAll(() => {
  server?.destroy()
  rmSync(scratch, { recursive: true, force: true })
})

function keel(args: string[], home: string, cwd: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home, KEEL_STORE: '', ...env },
    encoding: 'utf8',
    input: '',
    timeout: 120_000,
  })
}

function script(name: string, steps: unknown[]): string {
  const path = join(scratch, `${name}.json`)
  writeFileSync(path, JSON.stringify({ steps }))
  return `scripted/${path}`
}

async function rows(sql: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    return (await client.query(sql, params)).rows
  } finally {
    await client.end()
  }
}

describe.skipIf(skip)('keel over PostgreSQL', () => {
  test('KEEL_STORE: print mode writes there, -c continues it, sessions list/show/search read it', async () => {
    const home = join(scratch, 'home-env')
    const cwd = join(scratch, 'project-env')
    mkdirSync(cwd, { recursive: true })
    const env = { KEEL_STORE: server.url, KEEL_HOST: 'box-one' }
    const plan = script('plan', [
      {
        toolCalls: [
          { name: 'todo_write', arguments: { todos: [{ content: 'rename the widget', status: 'in_progress' }] } },
        ],
      },
      { text: 'planned' },
    ])
    const first = keel(['-p', 'tidy the widget', '--model', plan], home, cwd, env)
    expect(first.status, first.stderr).toBe(0)
    const id = /keel: session (\S+)/.exec(first.stderr)![1]!
    expect(existsSync(join(home, 'sessions'))).toBe(false) // nothing went to the files
    const [row] = await rows('SELECT host, cwd, title FROM keel_sessions WHERE id = $1', [id])
    expect(row).toEqual({ host: 'box-one', cwd, title: 'tidy the widget' })

    const shown = keel(['sessions', 'show', id.slice(0, 8)], home, cwd, env)
    expect(shown.status, shown.stderr).toBe(0)
    expect(shown.stdout).toContain('◐ rename the widget')
    const again = keel(['-c', '-p', 'and once more', '--model', script('plain', [{ text: 'ok' }])], home, cwd, env)
    expect(again.status, again.stderr).toBe(0)
    expect(again.stderr).toContain(`keel: session ${id}`)
    const events = await rows('SELECT count(*)::int AS n FROM keel_events WHERE session_id = $1', [id])
    expect(events[0].n).toBeGreaterThan(10)

    const listed = keel(['sessions', 'list'], home, cwd, env)
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`^${id}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d  tidy the widget`))
    // Another machine's session of the same path is not this folder's: -c and `sessions list` skip it, --all shows it.
    const elsewhere = keel(['sessions', 'list'], home, cwd, { ...env, KEEL_HOST: 'box-two' })
    expect(elsewhere.stdout).not.toContain(id)
    expect(keel(['sessions', 'list', '--all'], home, cwd, { ...env, KEEL_HOST: 'box-two' }).stdout).toContain(id)

    const found = keel(['sessions', 'search', 'widget'], home, cwd, env)
    expect(found.status, found.stderr).toBe(0)
    expect(found.stdout).toContain('prompt tidy the widget')
    expect(found.stdout).toContain('plan   rename the widget')
  })

  test("store in the user's settings applies; in an untrusted project's it is held back and the files are used", async () => {
    const home = join(scratch, 'home-settings')
    const cwd = join(scratch, 'project-settings')
    mkdirSync(join(cwd, '.keel'), { recursive: true })
    mkdirSync(home, { recursive: true })
    writeFileSync(join(cwd, '.keel', 'settings.json'), JSON.stringify({ store: server.url }))
    const held = keel(['-p', 'untrusted folder', '--model', script('a', [{ text: 'ok' }])], home, cwd)
    expect(held.status, held.stderr).toBe(0)
    expect(held.stderr).toMatch(/is not trusted: held back store from its project files/)
    const heldId = /keel: session (\S+)/.exec(held.stderr)![1]!
    expect(await rows('SELECT id FROM keel_sessions WHERE id = $1', [heldId])).toEqual([])
    expect(existsSync(join(home, 'sessions'))).toBe(true)

    rmSync(join(cwd, '.keel'), { recursive: true })
    writeFileSync(join(home, 'settings.json'), JSON.stringify({ store: server.urlWithPassword }))
    const mine = keel(['-p', 'my own store', '--model', script('b', [{ text: 'ok' }])], home, cwd)
    expect(mine.status, mine.stderr).toBe(0)
    const id = /keel: session (\S+)/.exec(mine.stderr)![1]!
    expect(await rows('SELECT id FROM keel_sessions WHERE id = $1', [id])).toEqual([{ id }])
    const config = keel(['config'], home, cwd)
    expect(config.stdout).toMatch(/store\s+"postgres:\/\/secret:\*\*\*@127\.0\.0\.1:\d+\/keel"/)
    expect(config.stdout + config.stderr).not.toContain('hunter2-pw')
    const list = keel(['sessions', 'list', '--json'], home, cwd)
    expect(list.stdout).toContain(id)
    expect(list.stdout + list.stderr).not.toContain('hunter2-pw')
  })

  test('a store that cannot be reached ends the command with one line and exit 1, without the password', () => {
    const home = join(scratch, 'home-down')
    const url = `postgres://me:pa55word-x@127.0.0.1:${server.port + 2}/keel`
    const result = keel(['-p', 'hello', '--model', script('c', [{ text: 'ok' }])], home, scratch, { KEEL_STORE: url })
    expect(result.status).toBe(1)
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^keel: the session store postgres:\/\/me:\*\*\*@127\.0\.0\.1:\d+\/keel failed: connect ECONNREFUSED/,
      ),
    ])
    expect(keel(['sessions', 'list'], home, scratch, { KEEL_STORE: 'mysql://x' }).stderr).toContain(
      'KEEL_STORE must be a postgres:// connection string',
    )
  })
})
