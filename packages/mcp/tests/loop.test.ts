// An MCP tool through the real agent loop: the scripted model calls it, the result reaches the model, and the call
// and its result are on the log like any other tool's.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import { trustFolder } from '@keel/settings'
import * as mcpPlugin from '../src/index.ts'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'
import { EVERYTHING } from './support.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const config = (servers: Record<string, unknown>, projectFile = false) => ({
  servers,
  projectFile,
  startTimeoutMs: 20_000,
  callTimeoutMs: 20_000,
  maxResultChars: 25_000,
})

describe('MCP tools in the agent loop', () => {
  test('the model calls mcp__everything__echo, sees the result, and both are on the log', async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ name: 'mcp__everything__echo', arguments: { message: 'ahoy' } }] },
        { text: 'The server said ahoy.' },
      ],
      plugins: [[mcpPlugin, config({ everything: EVERYTHING })]],
    })
    const agent = keel.agent()
    const result = await agent.prompt('ask the server')
    expect(result.reason).toBe('completed')
    // The servers start before the first request, so the first request already offers their tools.
    expect(keel.model.requests[0]!.tools.map((tool) => tool.name)).toContain('mcp__everything__echo')
    const call = agent.session.events.find((e) => e.type === 'tool/call')
    expect(call?.data).toMatchObject({ name: 'mcp__everything__echo' })
    const logged = agent.session.events.find((e) => e.type === 'tool/result')
    expect(logged?.data).toMatchObject({ isError: false })
    expect(textOfContent((logged!.data as { content: { type: string; text?: string }[] }).content)).toContain('ahoy')
    const sent = JSON.stringify(keel.model.requests[1]!.messages)
    expect(sent).toContain('Echo: ahoy')
  })

  test('a project .mcp.json is read from the project root; a broken one is a warning and the turn goes on', async () => {
    keel = await makeKeel({
      steps: [{ text: 'hello' }, { text: 'again' }],
      plugins: [[mcpPlugin, config({}, true)]],
    })
    writeFileSync(join(keel.cwd, '.mcp.json'), JSON.stringify({ mcpServers: { everything: EVERYTHING } }))
    // The person trusted the folder: an untrusted folder's .mcp.json is not read at all.
    trustFolder(keel.cwd)
    const warnings: string[] = []
    keel.ctx.on('keel/notice', (notice) => {
      if (notice.source === 'mcp') warnings.push(notice.text)
    })
    const agent = keel.agent()
    await agent.prompt('hi')
    expect(keel.model.requests[0]!.tools.map((tool) => tool.name)).toContain('mcp__everything__get-sum')
    expect(keel.ctx.mcp.status()[0]).toMatchObject({ name: 'everything', source: join(keel.cwd, '.mcp.json') })
    expect(warnings).toEqual([])
  })

  test('a .mcp.json that is not valid names the file and the key, and the session goes on without MCP', async () => {
    keel = await makeKeel({ steps: [{ text: 'hello' }], plugins: [[mcpPlugin, config({}, true)]] })
    writeFileSync(
      join(keel.cwd, '.mcp.json'),
      JSON.stringify({ mcpServers: { 'bad name!': { command: 'x' }, ok: { args: [] } } }),
    )
    trustFolder(keel.cwd)
    const warnings: string[] = []
    keel.ctx.on('keel/notice', (notice) => {
      if (notice.source === 'mcp') warnings.push(notice.text)
    })
    const result = await keel.agent().prompt('hi')
    expect(result.reason).toBe('completed')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain(
      `${join(keel.cwd, '.mcp.json')}: mcpServers: server name "bad name!" must be 1-40 letters`,
    )
  })

  test('permissions: in ask mode with no one to ask an MCP call is declined on the log; a rule lets it run', async () => {
    const call = { toolCalls: [{ name: 'mcp__everything__echo', arguments: { message: 'guarded' } }] }
    keel = await makeKeel({
      steps: [call, { text: 'declined' }, call, { text: 'ran' }],
      plugins: [
        [mcpPlugin, config({ everything: EVERYTHING })],
        [permissionsPlugin, { mode: 'ask', allow: [], deny: [] }],
      ],
    })
    const agent = keel.agent()
    await agent.prompt('try')
    const decision = agent.session.events.find((e) => e.type === 'permission/decision')
    expect(decision?.data).toMatchObject({ decision: 'deny' })
    const denied = agent.session.events.find((e) => e.type === 'tool/result')!
    expect(denied.data).toMatchObject({ isError: true })
    expect(JSON.stringify(denied.data)).not.toContain('Echo: guarded')
    keel.ctx.permissions.configure({ allow: ['mcp__everything__*'] })
    await agent.prompt('again')
    const results = agent.session.events.filter((e) => e.type === 'tool/result')
    expect(results).toHaveLength(2)
    expect(results[1]!.data).toMatchObject({ isError: false })
    expect(JSON.stringify(results[1]!.data)).toContain('Echo: guarded')
  })

  test('plan mode: a tool its server marks readOnlyHint runs; one that does not is refused', async () => {
    keel = await makeKeel({
      steps: [
        {
          toolCalls: [
            { name: 'mcp__everything__echo', arguments: { message: 'looked' } },
            { name: 'mcp__everything__toggle-simulated-logging', arguments: {} },
          ],
        },
        { text: 'explored' },
      ],
      plugins: [
        [mcpPlugin, config({ everything: EVERYTHING })],
        [permissionsPlugin, { mode: 'plan', allow: [], deny: [] }],
      ],
    })
    const agent = keel.agent()
    await agent.prompt('explore')
    const results = agent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => e.data as { isError: boolean; content: { type: string; text?: string }[] })
    expect(results).toHaveLength(2)
    expect(results[0]).toMatchObject({ isError: false })
    expect(textOfContent(results[0]!.content)).toContain('Echo: looked')
    expect(results[1]).toMatchObject({ isError: true })
    expect(textOfContent(results[1]!.content)).toContain('may change things until the person approves a plan')
  })
})
