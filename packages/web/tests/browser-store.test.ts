// Two machines over one PostgreSQL session store, end to end: process A (its own KEEL_HOME, KEEL_HOST=alpha) runs a
// session whose scripted model asks to run a command; `keel serve` of process B (another KEEL_HOME, KEEL_HOST=beta)
// lists it with its host and follows it live in headless Chromium; the approval answered in B's page travels through
// the database to A, which alone decides and logs it (naming B's machine), and the command runs on A, once B holds a
// copy of A's approval key: before that, A refuses B's answer and B is told which file to copy.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { writeComposition } from '../../../test-support/composition.ts'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { CHROMIUM, skipWithout } from '../../../test-support/system-tools.ts'
import { ensureClientBuilt } from '../src/build.ts'
import { launchBrowser, type Served, serve } from './serve-support.ts'

const skip =
  skipWithout('chromium', CHROMIUM !== undefined, 'the shared-store browser test') ||
  skipWithout('postgresql', HAS_POSTGRES, 'the shared-store browser test')

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-store-'))
const workA = join(scratch, 'work-a')
const workB = join(scratch, 'work-b')
let server: PostgresServer | undefined
let alpha: Served | undefined
let beta: Served | undefined
let context: BrowserContext | undefined

afterAll(async () => {
  await context?.close().catch(() => {})
  await alpha?.stop()
  await beta?.stop()
  server?.destroy()
  rmSync(scratch, { recursive: true, force: true })
})

async function call(served: Served, method: string, params: unknown): Promise<{ ok: boolean; value?: any }> {
  const response = await fetch(`${served.origin}/api/${method}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${served.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(params),
  })
  return (await response.json()) as { ok: boolean; value?: any }
}

/** The session's events in the database, as `type` or `type callId decision scope`. */
async function logged(sessionId: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: server!.url })
  await client.connect()
  try {
    const { rows } = await client.query('SELECT event FROM keel_events WHERE session_id = $1 ORDER BY seq', [sessionId])
    return rows.map(({ event }) => {
      const parsed = event
      return parsed.type === 'permission/decision'
        ? `${parsed.type} ${parsed.data.callId} ${parsed.data.decision} ${parsed.data.scope}`
        : parsed.type
    })
  } finally {
    await client.end()
  }
}

describe.skipIf(skip)('keel serve over a shared store, in headless Chromium', () => {
  beforeAll(async () => {
    await ensureClientBuilt()
    server = await startPostgres()
    mkdirSync(workA, { recursive: true })
    mkdirSync(workB, { recursive: true })
    writeFileSync(
      join(scratch, 'script-a.json'),
      JSON.stringify({
        steps: [
          {
            text: 'Writing it.',
            toolCalls: [{ id: 'call-write', name: 'bash', arguments: { command: 'echo ran > ran.txt' } }],
          },
          { toolCalls: [{ id: 'call-two', name: 'bash', arguments: { command: 'echo two > two.txt' } }] },
          { text: 'Wrote ran.txt.' },
        ],
      }),
    )
    writeFileSync(join(scratch, 'script-b.json'), JSON.stringify({ steps: [{ text: 'unused' }] }))
    writeComposition(join(scratch, 'keel.yml'), [
      "- { id: permissions, name: '@keel/permissions', config: { mode: ask } }",
    ])
    const run = (name: string, cwd: string, home: string, host: string, extra: string[] = []) =>
      serve(
        ['--port', '0', '--model', `scripted/${join(scratch, `script-${name}.json`)}`, '--cwd', cwd, ...extra],
        // A names the database in its own settings, B in KEEL_STORE.
        { KEEL_HOME: home, KEEL_HOST: host, KEEL_STORE: name === 'a' ? '' : server!.url },
        cwd,
      )
    const config = ['--config', join(scratch, 'keel.yml')]
    mkdirSync(join(scratch, 'home-a'), { recursive: true })
    writeFileSync(join(scratch, 'home-a', 'settings.json'), JSON.stringify({ store: server.url }))
    ;[alpha, beta] = await Promise.all([
      run('a', workA, join(scratch, 'home-a'), 'alpha', config),
      run('b', workB, join(scratch, 'home-b'), 'beta', [...config, '--all']),
    ])
    context = await launchBrowser(join(scratch, 'profile'), { width: 1100, height: 760 })
  }, 180_000)

  test("B's page lists A's session with its host, follows it live, and its approval reaches A", async () => {
    const errors: string[] = []
    const page: Page = context!.pages()[0] ?? (await context!.newPage())
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(beta!.url)
    await expect.poll(() => page.getByTestId('new-session').count(), { timeout: 20_000 }).toBe(1)

    // A starts a session and a turn once B's page is open: the list hears of it through the database.
    const created = await call(alpha!, 'session.create', {})
    const sessionId: string = created.value.session.id
    expect((await call(alpha!, 'session.prompt', { sessionId, text: 'Write the marker file' })).ok).toBe(true)
    const row = page.getByTestId('session-item').filter({ hasText: 'Write the marker file' })
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(1)
    await expect.poll(() => row.getByTestId('session-host').textContent(), { timeout: 20_000 }).toBe('alpha · ')
    await row.click()
    await expect.poll(() => page.getByTestId('conversation-host').textContent(), { timeout: 20_000 }).toBe('on alpha')

    // The waiting approval, asked on A, shows in B's page with what A's permission service said.
    const card = page.getByTestId('approval-card')
    await expect.poll(() => card.count(), { timeout: 20_000 }).toBe(1)
    expect(await card.getByTestId('approval-detail').textContent()).toBe('echo ran > ran.txt')
    await expect
      .poll(() => page.getByTestId('assistant-message').first().textContent(), { timeout: 20_000 })
      .toBe('Writing it.')
    expect(existsSync(join(workA, 'ran.txt'))).toBe(false)

    // A forged call id, or a session that is not waiting, is refused: nothing is written for it.
    const forged = await call(beta!, 'permission.answer', {
      sessionId,
      callId: 'call-forged',
      decision: 'allow',
      scope: 'once',
    })
    expect(forged).toEqual({ ok: true, value: { accepted: false } })

    // B's machine has a key of its own, not the person's: A refuses its answer, and the ask still waits.
    const unkeyed = await call(beta!, 'permission.answer', {
      sessionId,
      callId: 'call-write',
      decision: 'allow',
      scope: 'once',
    })
    const keyB = join(scratch, 'home-b', 'private', 'approval.key')
    expect(unkeyed).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        message: `the process running session ${sessionId} on alpha refused the answer: it is not signed with the approval key there (copy ${keyB} to that machine, the same file on both)`,
      },
    })
    expect(existsSync(join(workA, 'ran.txt'))).toBe(false)
    await expect.poll(() => card.count(), { timeout: 20_000 }).toBe(1)
    // The person copies A's key to B.
    copyFileSync(join(scratch, 'home-a', 'private', 'approval.key'), keyB)

    // B's page allows it: the answer goes through the database to A, which decides, logs and runs the command; B's
    // page shows the rest of the turn as A appends it, without a reload.
    await card.getByTestId('allow-once').click()
    await expect
      .poll(() => page.getByTestId('permission-decision').allTextContents(), { timeout: 20_000 })
      .toEqual(['✓ allowed once by the user on beta'])
    await expect.poll(() => readFileSync(join(workA, 'ran.txt'), 'utf8'), { timeout: 20_000 }).toBe('ran\n')

    // The next ask shows in B's page as A asks it; A's own door answers first: B's card goes, and B's late answer is
    // told the ask no longer waits.
    await expect
      .poll(() => card.getByTestId('approval-detail').textContent(), { timeout: 20_000 })
      .toBe('echo two > two.txt')
    expect(
      await call(alpha!, 'permission.answer', { sessionId, callId: 'call-two', decision: 'deny', scope: 'once' }),
    ).toEqual({ ok: true, value: { accepted: true } })
    await expect.poll(() => card.count(), { timeout: 20_000 }).toBe(0)
    expect(
      await call(beta!, 'permission.answer', { sessionId, callId: 'call-two', decision: 'allow', scope: 'once' }),
    ).toEqual({ ok: true, value: { accepted: false } })
    await expect
      .poll(() => page.getByTestId('permission-decision').allTextContents(), { timeout: 20_000 })
      .toEqual(['✓ allowed once by the user on beta', '✗ denied once by the user'])
    await expect
      .poll(() => page.getByTestId('assistant-message').last().textContent(), { timeout: 20_000 })
      .toBe('Wrote ran.txt.')
    expect(existsSync(join(workA, 'two.txt'))).toBe(false)
    const events = await logged(sessionId)
    expect(events.filter((event) => event.startsWith('permission/decision'))).toEqual([
      'permission/decision call-write allow once',
      'permission/decision call-two deny once',
    ])
    expect(events.indexOf('permission/decision call-write allow once')).toBeLessThan(events.indexOf('tool/result'))
    expect(events.at(-1)).toBe('turn/end')
    // The answer was the first: A's own door is told the ask is no longer waiting.
    expect(
      await call(alpha!, 'permission.answer', { sessionId, callId: 'call-write', decision: 'deny', scope: 'once' }),
    ).toEqual({ ok: true, value: { accepted: false } })
    // Its checkpoints are on A: a rewind of the files asked on B says so; the conversation alone may fork on B.
    const history = await call(beta!, 'session.history', { sessionId })
    const seq = history.value.events.find((entry: any) => entry.event.type === 'user/message').event.seq
    expect(await call(beta!, 'session.rewindPreview', { sessionId, seq, scope: 'both' })).toEqual({
      ok: false,
      error: {
        code: 'conflict',
        message: `session ${sessionId} ran on alpha: its checkpoints are there, not on beta; rewind its files from alpha, or rewind the conversation only (it forks here)`,
      },
    })
    expect((await call(beta!, 'session.rewindPreview', { sessionId, seq, scope: 'conversation' })).ok).toBe(true)
    // A holds the session: a prompt from B is refused, naming where it is open.
    const prompted = await call(beta!, 'session.prompt', { sessionId, text: 'and from beta' })
    expect(prompted).toMatchObject({ ok: false, error: { code: 'busy' } })
    expect((prompted as any).error.message).toMatch(new RegExp(`^session ${sessionId} is open on alpha \\(pid \\d+`))
    // B never opened the session for writing: its KEEL_HOME holds no session files, and A still holds the session.
    expect(existsSync(join(scratch, 'home-b', 'sessions'))).toBe(false)
    expect(errors).toEqual([])
  }, 120_000)
})
