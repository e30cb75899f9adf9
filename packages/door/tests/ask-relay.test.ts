// The approval relay through a shared store, with a real agent turn: the owner's ask is written to the store with
// its page; an answer another machine writes while the owner's LISTEN connection is down is applied once it listens
// again (the first answer: the owner's own door never answered); the owner logs the decision, naming that machine,
// and the tool runs. An answer whose proof does not hold (none, another key, a field changed) is refused in one
// notice and the ask waits again.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as agentPlugin from '@keel/agent'
import * as llmPlugin from '@keel/llm'
import { ScriptedAdapter } from '@keel/llm'
import * as permissionsPlugin from '@keel/permissions'
import { describeDecision } from '@keel/permissions'
import { type Notice, onNotice } from '@keel/session'
import { approvalKeyPath } from '@keel/session/paths'
import * as devPlugin from '@keel/session/dev'
import * as shellPlugin from '@keel/shell'
import { answerProof, approvalKey, askDigest, feedOf } from '@keel/store-pg'
import * as toolsPlugin from '@keel/tools'
import { HAS_POSTGRES, type PostgresServer, startPostgres } from '../../../test-support/postgres.ts'
import { StoreContexts, until } from '../../../test-support/store-contexts.ts'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { relayAsks } from '../src/ask-relay.ts'

const skip = skipWithout('postgresql', HAS_POSTGRES, 'the approval relay through the store')
const cwd = mkdtempSync(join(tmpdir(), 'keel-relay-'))
// The person's KEEL_HOME, shared by the owner and the answering "machine" here: both hold the same approval key.
const home = mkdtempSync(join(tmpdir(), 'keel-relay-home-'))
process.env.KEEL_HOME = home
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
  rmSync(home, { recursive: true, force: true })
})

async function sql(statement: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    return (await client.query(statement, params)).rows
  } finally {
    await client.end()
  }
}

/** An owner over the store as `alpha`, in ask mode, whose own door asks the person, who never answers. */
async function startOwner() {
  const ctx = await boot('alpha', [
    [llmPlugin, {}],
    [toolsPlugin],
    [agentPlugin, { maxSteps: 10 }],
    [shellPlugin],
    [permissionsPlugin, { mode: 'ask', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
  ])
  let asked = 0
  ctx.permissions.setAsker(
    (_ask, signal) =>
      new Promise((_, reject) => {
        asked++
        signal.addEventListener('abort', () => reject(new Error('settled elsewhere')))
      }),
  )
  return { ctx, asked: () => asked }
}

describe.skipIf(skip)('the approval relay', () => {
  test("a remote answer reaches the owner's waiting ask, also when written while its LISTEN was down", async () => {
    const { ctx: owner, asked } = await startOwner()
    const other = feedOf((await boot('beta')).sessions)!
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
    expect(asked()).toBe(1)

    // The owner's LISTEN connection drops; the answer written meanwhile is not announced to it.
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    const { rows } = await client.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE 'keel alpha % listen'",
    )
    await client.end()
    expect(rows).toEqual([{ ok: true }])
    expect(other.answer(row!, { decision: 'allow', scope: 'once' }, 'beta', approvalKey())).toBe(true)
    await turn
    expect(readFileSync(join(cwd, 'relayed.txt'), 'utf8')).toBe('relayed\n')
    const decisions = owner.sessions
      .get(agent.id)!
      .events.filter((event) => event.type === 'permission/decision')
      .map((event) => event.data)
    expect(decisions).toEqual([
      expect.objectContaining({ callId: 'call-1', decision: 'allow', scope: 'once', answeredOn: 'beta' }),
    ])
    expect(describeDecision(decisions[0]!)).toBe('✓ allowed once by the user on beta')
    expect(other.ask(agent.id, 'call-1')).toMatchObject({ settled: true, taken: true, answeredFrom: 'beta' })
    expect(other.waitingOn(agent.id)).toEqual([])
    stop()
    expect(existsSync(join(cwd, 'relayed.txt'))).toBe(true)
  }, 60_000)

  test('an answer whose proof does not hold is refused in one notice and the ask waits; a proven one decides', async () => {
    const { ctx: owner } = await startOwner()
    const other = feedOf((await boot('beta')).sessions)!
    const notices: Notice[] = []
    // The relay's notices (the permission service also says the sandbox is off: no sandbox plugin here).
    const listening = onNotice(owner, (notice) => {
      if (notice.text.startsWith('refused an answer')) notices.push(notice)
    })
    const stop = relayAsks(owner)
    const model = new ScriptedAdapter({
      steps: [
        { toolCalls: [{ id: 'call-2', name: 'bash', arguments: { command: 'echo forged > forged.txt' } }] },
        { text: 'done' },
      ],
    })
    const agent = owner.agents.create({ cwd, model })
    const turn = agent.prompt([{ type: 'text', text: 'write it' }])
    await until(() => other.waitingOn(agent.id).length === 1, 'the ask in the store')
    const asked = other.ask(agent.id, 'call-2')!
    const key = approvalKey()
    const target = {
      sessionId: agent.id,
      callId: 'call-2',
      nonce: asked.nonce!,
      asked: askDigest(asked.ask),
      from: 'beta',
    }
    const allow = { decision: 'allow', scope: 'once' }
    const write = (answer: object, proof: string | null) =>
      sql('UPDATE keel_asks SET answer = $3, answered_from = $4, proof = $5 WHERE session_id = $1 AND call_id = $2', [
        agent.id,
        'call-2',
        JSON.stringify(answer),
        'beta',
        proof,
      ])
    const refused = async (count: number, what: string) => {
      await until(() => notices.length === count, what)
      // The refused answer is gone: the ask waits again, on every page.
      await until(() => other.waitingOn(agent.id).length === 1, `the ask waiting again after ${what}`)
    }
    // Anything that can write the table, without the key: no proof, a proof made with another key, and a proven
    // denial changed into an allow (or to say always).
    await write(allow, null)
    await refused(1, 'the unsigned answer refused')
    await write(allow, answerProof(approvalKey(join(home, 'another-machine.key')), target, allow))
    await refused(2, 'the answer signed with another key refused')
    await write(allow, answerProof(key, target, { decision: 'deny', scope: 'once' }))
    await refused(3, 'the changed answer refused')
    await write({ ...allow, scope: 'always' }, answerProof(key, target, allow))
    await refused(4, 'the widened answer refused')
    // The question rewritten in the row ("echo hi" shown for what the owner asked): the door with the key answers
    // what it was shown, which is not what the owner asked.
    const [{ ask: original }] = await sql("SELECT ask::text AS ask FROM keel_asks WHERE call_id = 'call-2'")
    const shown = { ...asked.ask, summary: 'bash: echo hi', detail: 'echo hi' }
    await sql("UPDATE keel_asks SET ask = $1 WHERE call_id = 'call-2'", [JSON.stringify(shown)])
    expect(other.answer(other.ask(agent.id, 'call-2')!, allow, 'beta', key)).toBe(true)
    await refused(5, 'the answer to a rewritten question refused')
    await sql("UPDATE keel_asks SET ask = $1 WHERE call_id = 'call-2'", [original])
    expect(notices).toEqual(
      Array(5).fill({
        source: 'permissions',
        level: 'warn',
        text: `refused an answer from beta to the bash ask call-2 of session ${agent.id}: it is not signed with the approval key ${approvalKeyPath(home)} (each machine whose doors answer needs a copy of that file); the ask still waits`,
      }),
    )
    expect(existsSync(join(cwd, 'forged.txt'))).toBe(false)
    expect(owner.sessions.get(agent.id)!.events.some((event) => event.type === 'permission/decision')).toBe(false)

    // The person copies another machine's key here (the owner reads it again for each answer, no restart), and the
    // door holding that key answers: that one decides.
    copyFileSync(join(home, 'another-machine.key'), approvalKeyPath(home))
    expect(other.answer(other.ask(agent.id, 'call-2')!, allow, 'beta', approvalKey())).toBe(true)
    await turn
    expect(readFileSync(join(cwd, 'forged.txt'), 'utf8')).toBe('forged\n')
    expect(notices).toHaveLength(5)
    const decisions = owner.sessions
      .get(agent.id)!
      .events.filter((event) => event.type === 'permission/decision')
      .map((event) => event.data)
    expect(decisions).toEqual([expect.objectContaining({ callId: 'call-2', decision: 'allow', answeredOn: 'beta' })])
    stop()
    listening()
  }, 60_000)
})
