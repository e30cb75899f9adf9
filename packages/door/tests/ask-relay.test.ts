// The approval relay through a shared store, with a real agent turn: the owner's ask is written to the store with
// its page; an answer another machine writes while the owner's LISTEN connection is down is applied once it listens
// again (the first answer: the owner's own door never answered); the owner logs the decision and the tool runs.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as agentPlugin from '@keel/agent'
import * as llmPlugin from '@keel/llm'
import { ScriptedAdapter } from '@keel/llm'
import * as permissionsPlugin from '@keel/permissions'
import * as devPlugin from '@keel/session/dev'
import * as shellPlugin from '@keel/shell'
import { feedOf } from '@keel/store-pg'
import * as toolsPlugin from '@keel/tools'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { StoreContexts, until } from '../../../test-support/store-contexts.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { relayAsks } from '../src/ask-relay.ts'

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the approval relay through the store')
const cwd = mkdtempSync(join(tmpdir(), 'keel-relay-'))
let server: PostgresServer
const stores = new StoreContexts(() => server.url)
/** A context on the store as `host`, checked by the session invariants (the dev plugin). */
const boot = (host: string, plugins: [unknown, unknown?][] = []) => stores.boot(host, [[devPlugin], ...plugins])

beforeAll(async () => {
  if (!skip) server = await startPostgres()
}, 60_000)
afterAll(async () => {
  await stores.stop()
  server?.destroy()
  rmSync(cwd, { recursive: true, force: true })
})

describe.skipIf(skip)('the approval relay', () => {
  test("a remote answer reaches the owner's waiting ask, also when written while its LISTEN was down", async () => {
    const owner = await boot('alpha', [
      [llmPlugin, {}],
      [toolsPlugin],
      [agentPlugin, { maxSteps: 10 }],
      [shellPlugin],
      [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
    ])
    const other = feedOf((await boot('beta')).sessions)!
    // The owner's door: it asks the person, who does not answer.
    let asked = 0
    owner.permissions.setAsker(
      (_ask, signal) =>
        new Promise((_, reject) => {
          asked++
          signal.addEventListener('abort', () => reject(new Error('settled elsewhere')))
        }),
    )
    const stop = relayAsks(owner)
    const model = new ScriptedAdapter({
      steps: [
        { toolCalls: [{ id: 'call-1', name: 'bash', arguments: { command: 'echo relayed > relayed.txt' } }] },
        { text: 'done' },
      ],
    })
    const agent = owner.agents.create({ cwd, model })
    const turn = agent.prompt([{ type: 'text', text: 'write it' }])
    await until(() => other.waitingOn(agent.id).length === 1, 'the ask in the store')
    const [row] = other.waitingOn(agent.id)
    expect(row).toMatchObject({ sessionId: agent.id, callId: 'call-1', pageId: agent.id, host: 'alpha' })
    expect(row!.ask).toMatchObject({ tool: 'bash', detail: 'echo relayed > relayed.txt' })
    expect(asked).toBe(1)

    // The owner's LISTEN connection drops; the answer written meanwhile is not announced to it.
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    const { rows } = await client.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE 'keel alpha % listen'",
    )
    await client.end()
    expect(rows).toEqual([{ ok: true }])
    expect(other.answer(agent.id, 'call-1', { decision: 'allow', scope: 'once' }, 'beta')).toBe(true)
    await turn
    expect(readFileSync(join(cwd, 'relayed.txt'), 'utf8')).toBe('relayed\n')
    const decisions = owner.sessions
      .get(agent.id)!
      .events.filter((event) => event.type === 'permission/decision')
      .map((event) => event.data)
    expect(decisions).toEqual([expect.objectContaining({ callId: 'call-1', decision: 'allow', scope: 'once' })])
    expect(other.ask(agent.id, 'call-1')).toMatchObject({ settled: true, taken: true, answeredFrom: 'beta' })
    expect(other.waitingOn(agent.id)).toEqual([])
    stop()
    expect(existsSync(join(cwd, 'relayed.txt'))).toBe(true)
  }, 60_000)
})
