// The mcpServers an ACP client sends with session/new are connected for that session: the model can call their tools,
// the client sees the calls as tool cards, and closing the connection stops the servers.
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type McpServer, methods, PROTOCOL_VERSION } from '@agentclientprotocol/sdk'
import * as mcpPlugin from '@keel/mcp'
import { trustFolder } from '@keel/settings'
import { makeKeel, waitFor, type Keel } from '../../../test-support/harness.ts'
import { EVERYTHING, FAULTY } from '../../mcp/tests/support.ts'
import { alive as processAlive } from '../../../test-support/processes.ts'
import { connectInProcess, initialize, toolTrace } from './support.ts'

let keel: Keel | undefined
let client: ReturnType<typeof connectInProcess> | undefined
afterEach(async () => {
  await client?.close()
  client = undefined
  await keel?.dispose()
  keel = undefined
})

const mcpConfig = {
  servers: {},
  projectFile: false,
  startTimeoutMs: 20_000,
  callTimeoutMs: 20_000,
  maxResultChars: 25_000,
}

describe('MCP servers from the client', () => {
  it("advertises http and sse, connects the session's servers, and the model's call reaches them", async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ id: 'call-echo', name: 'mcp__every_thing__echo', arguments: { message: 'via acp' } }] },
        { text: 'done' },
      ],
      plugins: [[mcpPlugin, mcpConfig]],
    })
    client = connectInProcess(keel)
    const init = await initialize(client)
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: true })
    const agent = client.connection.agent
    const { sessionId } = await agent.request(methods.agent.session.new, {
      cwd: keel.cwd,
      mcpServers: [
        {
          name: 'every thing',
          command: EVERYTHING.command,
          args: EVERYTHING.args,
          env: [{ name: 'KEEL_TEST', value: '1' }],
        },
      ],
    })
    expect(keel.ctx.mcp.status()).toMatchObject([{ name: 'every_thing', state: 'ready', source: 'acp session' }])
    const response = await agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'echo' }],
    })
    expect(response.stopReason).toBe('end_turn')
    expect(toolTrace(client.updates(sessionId))).toEqual([
      'call call-echo other in_progress',
      'update call-echo completed',
    ])
    expect(JSON.stringify(keel.model.requests[1]!.messages)).toContain('Echo: via acp')

    const pid = keel.ctx.mcp.status()[0]!.pid!
    await client.close()
    client = undefined
    expect(keel.ctx.mcp.status()).toEqual([])
    expect(keel.ctx.tools.get('mcp__every_thing__echo')).toBeUndefined()
    expect(processAlive(pid)).toBe(false)
  })
})

describe('a notice reaches the client', () => {
  const broken: McpServer[] = [
    {
      name: 'broken',
      command: FAULTY.command,
      args: FAULTY.args,
      env: [{ name: 'FAULTY_FAIL_AT_START', value: '1' }],
    },
  ]
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((done) => setTimeout(done, 10))
  }

  it("a broken server's warning is a notice update for a client that shows notices", async () => {
    keel = await makeKeel({ steps: [], plugins: [[mcpPlugin, mcpConfig]] })
    client = connectInProcess(keel)
    const agent = client.connection.agent
    await agent.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { session: { notices: {} } },
    })
    const { sessionId } = await agent.request(methods.agent.session.new, {
      cwd: keel.cwd,
      mcpServers: broken,
    })
    await until(() => client!.updates(sessionId, 'notice').length > 0)
    expect(client.updates(sessionId, 'notice')).toEqual([
      {
        sessionUpdate: 'notice',
        severity: 'warning',
        title: expect.stringMatching(/^mcp server broken failed to start: .*missing database url/),
      },
    ])
  })

  it('a client that does not say so gets no update, only the line on stderr (an agent message would split a reply)', async () => {
    keel = await makeKeel({ steps: [], plugins: [[mcpPlugin, mcpConfig]] })
    const logged: string[] = []
    client = connectInProcess(keel, false, (line) => logged.push(line))
    await initialize(client)
    const agent = client.connection.agent
    const { sessionId } = await agent.request(methods.agent.session.new, {
      cwd: keel.cwd,
      mcpServers: broken,
    })
    await until(() => logged.some((line) => line.includes('broken failed to start')))
    expect(logged).toEqual([expect.stringMatching(/^mcp server broken failed to start: .*missing database url/)])
    await new Promise((done) => setTimeout(done, 50))
    expect(client.updates(sessionId, 'notice')).toEqual([])
    expect(client.updates(sessionId, 'agent_message_chunk')).toEqual([])
  })
})

describe("each session's own project", () => {
  it(".mcp.json and AGENTS.md come from the session's cwd; an untrusted project's servers wait for trust", async () => {
    keel = await makeKeel({
      steps: [{ text: 'one' }, { text: 'two' }, { text: 'three' }],
      plugins: [[mcpPlugin, { ...mcpConfig, projectFile: true }]],
    })
    // Two projects besides the harness's own cwd; each .mcp.json server command leaves a marker when it is started.
    const project = (name: string) => {
      const dir = join(keel!.cwd, name)
      mkdirSync(join(dir, '.git'), { recursive: true })
      writeFileSync(join(dir, 'AGENTS.md'), `Instructions of ${name}.\n`)
      writeFileSync(
        join(dir, '.mcp.json'),
        JSON.stringify({ mcpServers: { [`srv_${name}`]: { command: 'sh', args: ['-c', 'pwd > started.txt'] } } }),
      )
      return dir
    }
    const untrusted = project('untrusted')
    const trusted = project('trusted')
    trustFolder(trusted)
    client = connectInProcess(keel)
    await initialize(client)
    const agent = client.connection.agent
    const prompt = async (cwd: string) => {
      const { sessionId } = await agent.request(methods.agent.session.new, { cwd, mcpServers: [] })
      await agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'go' }] })
    }
    await prompt(untrusted)
    await prompt(trusted)
    await waitFor(() => existsSync(join(trusted, 'started.txt')), "the trusted project's server", 20_000)
    expect(readFileSync(join(trusted, 'started.txt'), 'utf8').trim()).toBe(realpathSync(trusted))
    expect(existsSync(join(untrusted, 'started.txt'))).toBe(false)
    const systems = keel.model.requests.map((request) => request.system)
    expect(systems[0]).toContain('Instructions of untrusted.')
    expect(systems[1]).toContain('Instructions of trusted.')
    expect(systems[1]).not.toContain('Instructions of untrusted.')
    // Trusted later (the web page's offer, keel trust): the next session there starts its servers.
    trustFolder(untrusted)
    await prompt(untrusted)
    await waitFor(() => existsSync(join(untrusted, 'started.txt')), "the now trusted project's server", 20_000)
  })
})
