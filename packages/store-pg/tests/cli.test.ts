// `keel` over PostgreSQL end to end: KEEL_STORE and `store` in the settings pick the database; resume, `-c`,
// sessions list/show/search read from it; a project's `store` waits for trust; the password is never printed.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import pg from 'pg'
import * as pgPlugin from '@keel/store-pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'

// A test-only event, declared as @keel/session's tests declare it.
declare module '@keel/session' {
  interface SessionEventMap {
    'test/note': { text: string }
  }
}

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

describe.skipIf(skip)('keel over PostgreSQL', { timeout: 120_000 }, () => {
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
    expect(listed.stdout).toMatch(new RegExp(`^${id}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d  .*tidy the widget`))
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

  test('sessions copy: files to the database and back, idempotent, and a failed copy leaves nothing', async () => {
    const home = join(scratch, 'home-copy')
    const cwd = join(scratch, 'project-copy')
    mkdirSync(cwd, { recursive: true })
    const ids: string[] = []
    for (const prompt of ['one', 'two']) {
      const run = keel(['-p', prompt, '--model', script(`copy-${prompt}`, [{ text: 'ok' }])], home, cwd)
      expect(run.status, run.stderr).toBe(0)
      ids.push(/keel: session (\S+)/.exec(run.stderr)![1]!)
    }
    const up = keel(['sessions', 'copy', '--all', '--to', server.urlWithPassword], home, cwd)
    expect(up.status, up.stderr).toBe(0)
    expect(up.stdout).toMatch(/^copied 2 sessions to postgres:\/\/secret:\*\*\*@127\.0\.0\.1:\d+\/keel\n$/)
    expect(up.stdout + up.stderr).not.toContain('hunter2-pw')
    const again = keel(['sessions', 'copy', '--all', '--to', server.url], home, cwd)
    expect(again.stdout).toContain('copied 0 sessions')
    expect(again.stdout).toContain('2 already there, left as they are')
    const stored = await rows(
      'SELECT id, (SELECT count(*)::int FROM keel_events e WHERE e.session_id = s.id) AS n FROM keel_sessions s WHERE id = ANY($1)',
      [ids],
    )
    expect(stored.map((row) => row.id).sort()).toEqual([...ids].sort())

    // Back to the files of another KEEL_HOME: the same events, line for line.
    const other = join(scratch, 'home-copy-back')
    const down = keel(['sessions', 'copy', ids[0]!, '--to', 'files'], other, cwd, { KEEL_STORE: server.url })
    expect(down.status, down.stderr).toBe(0)
    expect(down.stdout).toBe('copied 1 session to the JSONL files\n')
    const shown = (home_: string, env: Record<string, string> = {}) =>
      JSON.parse(keel(['sessions', 'show', ids[0]!, '--json'], home_, cwd, env).stdout).events
    expect(shown(other)).toBe(shown(home))
    expect(shown(other)).toBe(stored.find((row) => row.id === ids[0])!.n)
    expect(keel(['sessions', 'copy', '--all', '--to', 'files'], home, cwd).stderr).toContain('in the files already')
  })

  test('a copy that fails part way leaves no session behind (one transaction)', async () => {
    const ctx = new Context()
    ctx.plugin(pgPlugin, { url: server.url })
    await ctx.start()
    try {
      const session = ctx.sessions.create({ cwd: '/p', id: 'whole', persist: false })
      for (let i = 0; i < 1200; i++) session.append('test/note', { text: `n${i}` })
      const events = session.events.map((event) => (event.seq === 1100 ? { ...event, seq: 1101 } : event))
      expect(() => ctx.sessions.backend.write({ ...session.header }, events)).toThrow(/does not follow the last one/)
      expect(await rows("SELECT id FROM keel_sessions WHERE id = 'whole'")).toEqual([])
      expect(await rows("SELECT seq FROM keel_events WHERE session_id = 'whole'")).toEqual([])
    } finally {
      await ctx.stop()
    }
  })

  test('a rewind of files from another machine says where the checkpoints are', () => {
    const home = join(scratch, 'home-rewind')
    const cwd = join(scratch, 'project-rewind')
    mkdirSync(cwd, { recursive: true })
    const env = { KEEL_STORE: server.url, KEEL_HOST: 'laptop-a' }
    const run = keel(['-p', 'change nothing', '--model', script('rewind', [{ text: 'ok' }])], home, cwd, env)
    expect(run.status, run.stderr).toBe(0)
    const id = /keel: session (\S+)/.exec(run.stderr)![1]!
    const elsewhere = keel(['sessions', 'rewind', id, '--to', '1'], home, cwd, { ...env, KEEL_HOST: 'ci-runner-b' })
    expect(elsewhere.status).toBe(1)
    expect(elsewhere.stderr).toBe(
      `keel: session ${id} ran on laptop-a: its checkpoints are there, not on ci-runner-b; rewind its files from laptop-a, or fork the conversation here with --conversation\n`,
    )
    const conversation = keel(['sessions', 'rewind', id, '--to', '1', '--conversation'], home, cwd, {
      ...env,
      KEEL_HOST: 'ci-runner-b',
    })
    expect(conversation.status, conversation.stderr).toBe(0)
  })
})
