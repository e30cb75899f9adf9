import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as agentPlugin from '@keel/agent'
import * as llmPlugin from '@keel/llm'
import { ScriptedAdapter } from '@keel/llm'
import * as permissionsPlugin from '@keel/permissions'
import { relayAsks } from '@keel/door/ask-relay'
import { approvalKeyPath } from '@keel/session/paths'
import * as shellPlugin from '@keel/shell'
import * as devPlugin from '@keel/session/dev'
import { feedOf } from '@keel/store-pg'
import * as toolsPlugin from '@keel/tools'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { StoreContexts } from '../../../test-support/store-contexts.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { WebHost } from '../src/host.ts'
import { openEvents, TOKEN, waitFor } from './host-support.ts'

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the web host over a shared store')
let server: PostgresServer
const stores = new StoreContexts(() => server.url)
/** A context on the store as `host`, checked by the session invariants (the dev plugin). */
const boot = (host: string, plugins: [unknown, unknown?][] = []) => stores.boot(host, [[devPlugin], ...plugins])
let host: WebHost | undefined

beforeAll(async () => {
  if (!skip) server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await host?.close()
  await stores.stop()
  server?.destroy()
  rmSync(homes, { recursive: true, force: true })
})
/** Each "machine" its own KEEL_HOME, as two machines have. */
const homes = mkdtempSync(join(tmpdir(), 'keel-remote-homes-'))

async function rpc(method: string, params: unknown) {
  const response = await host!.app.request(`/api/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(params),
  })
  return response.json()
}

describe.skipIf(skip)('the web host over a shared store', () => {
  test("another process's session is followed live, across a dropped LISTEN connection", async () => {
    const alpha = await boot('alpha')
    const session = alpha.sessions.create({ cwd: '/work/project', id: 'elsewhere' })
    const beta = await boot('beta', [
      [llmPlugin, {}],
      [toolsPlugin],
      [agentPlugin, {}],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
    ])
    delete process.env.KEEL_HOST
    host = new WebHost({ ctx: beta, cwd: '/work/project', model: new ScriptedAdapter({ steps: [] }), token: TOKEN })
    host.listening('127.0.0.1', 80)
    const tab = await openEvents(host)

    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append(
      'user/message',
      { message: { role: 'user', content: [{ type: 'text', text: 'from alpha' }] } },
      { surfaceOp: { op: 'append' } },
    )
    await waitFor(() => tab.sessionEvents('elsewhere').length === 2, 'the two events on the tab', 10_000)
    expect(tab.sessionEvents('elsewhere').map((frame) => [frame.event.seq, frame.event.type])).toEqual([
      [0, 'turn/start'],
      [1, 'user/message'],
    ])
    expect(tab.frames.some((frame) => frame.type === 'session/created' && frame.session.id === 'elsewhere')).toBe(true)

    const listed = await rpc('session.list', {})
    expect(listed.value.host).toBe('beta')
    expect(listed.value.sessions).toEqual([
      expect.objectContaining({ id: 'elsewhere', host: 'alpha', running: true, title: 'from alpha', live: false }),
    ])
    const tail = await rpc('session.history', { sessionId: 'elsewhere' })
    expect(tail.value).toMatchObject({ running: true, asks: [] })

    // The LISTEN connection is cut; what alpha appends meanwhile reaches the tab once the host listens again.
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    const { rows } = await client.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE 'keel beta % listen'",
    )
    await client.end()
    expect(rows).toEqual([{ ok: true }])
    session.append('turn/end', { turn: 1, reason: 'completed' })
    await waitFor(() => tab.sessionEvents('elsewhere').length === 3, 'the event committed while cut', 10_000)
    expect(tab.sessionEvents('elsewhere')[2]!.event.type).toBe('turn/end')
    expect((await rpc('session.history', { sessionId: 'elsewhere' })).value.running).toBe(false)
    // A tab that (re)connects is told where the followed log ends, so a window behind it pulls the tail.
    const later = await openEvents(host)
    expect(later.frames[0]).toMatchObject({
      type: 'hello',
      sessions: [{ sessionId: 'elsewhere', lastSeq: 2, running: false }],
    })
    await later.close()

    // No ask waits: an answer naming one is refused, as is a session id that is not one.
    expect(
      await rpc('permission.answer', { sessionId: 'elsewhere', callId: 'call-x', decision: 'allow', scope: 'once' }),
    ).toEqual({ ok: true, value: { accepted: false } })
    expect(
      (await rpc('permission.answer', { sessionId: '../x', callId: 'call-x', decision: 'allow', scope: 'once' })).ok,
    ).toBe(false)
    // An ask its owner no longer holds the session for is not shown and cannot be answered.
    feedOf(alpha.sessions)!.putAsk('elsewhere', 'call-y', 'elsewhere', { tool: 'bash', summary: 'bash: make' })
    alpha.sessions.close(session)
    expect((await rpc('session.history', { sessionId: 'elsewhere' })).value.asks).toEqual([])
    expect(
      await rpc('permission.answer', { sessionId: 'elsewhere', callId: 'call-y', decision: 'allow', scope: 'once' }),
    ).toEqual({ ok: true, value: { accepted: false } })
    await tab.close()
  })

  test('an answer from a door without the approval key of the owner is refused, naming the key; with a copy it counts', async () => {
    const homeA = join(homes, 'a')
    const homeB = join(homes, 'b')
    process.env.KEEL_HOME = homeA
    const alpha = await boot('alpha', [
      [llmPlugin, {}],
      [toolsPlugin],
      [agentPlugin, { maxSteps: 10 }],
      [shellPlugin],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
    ])
    alpha.permissions.setAsker((_ask, signal) => new Promise((_, reject) => signal.addEventListener('abort', reject)))
    const stop = relayAsks(alpha)
    const cwd = mkdtempSync(join(homes, 'work-'))
    const model = new ScriptedAdapter({
      steps: [{ toolCalls: [{ id: 'call-r', name: 'bash', arguments: { command: 'echo hi' } }] }, { text: 'done' }],
    })
    const agent = alpha.agents.create({ cwd, model })
    const turn = agent.prompt([{ type: 'text', text: 'go' }])
    process.env.KEEL_HOME = homeB
    const beta = await boot('beta', [
      [llmPlugin, {}],
      [toolsPlugin],
      [agentPlugin, {}],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
    ])
    await host?.close()
    host = new WebHost({ ctx: beta, cwd, model: new ScriptedAdapter({ steps: [] }), token: TOKEN })
    host.listening('127.0.0.1', 80)
    await waitFor(() => feedOf(beta.sessions)!.waitingOn(agent.id).length === 1, 'the ask in the store', 10_000)

    const params = { sessionId: agent.id, callId: 'call-r', decision: 'allow', scope: 'once' }
    expect(await rpc('permission.answer', params)).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        message: `the process running session ${agent.id} on alpha refused the answer: it is not signed with the approval key there (copy ${approvalKeyPath(homeB)} to that machine, the same file on both)`,
      },
    })
    // The person copies the key: the next answer counts, and the decision names the machine it came from.
    copyFileSync(approvalKeyPath(homeA), approvalKeyPath(homeB))
    expect(await rpc('permission.answer', params)).toEqual({ ok: true, value: { accepted: true } })
    await turn
    const decision = alpha.sessions.get(agent.id)!.events.find((event) => event.type === 'permission/decision')
    expect(decision?.data).toMatchObject({ callId: 'call-r', decision: 'allow', answeredOn: 'beta' })
    stop()
  }, 60_000)
})
