// The MCP client against real servers spawned over stdio: the published server-everything, and a faulty server
// built with the SDK whose tools crash, hang or change the tool list.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { waitFor } from '../../../test-support/harness.ts'
import { alive } from '../../../test-support/processes.ts'
import { bootMcp, EVERYTHING, FAULTY, textOf, type Booted } from './support.ts'

let booted: Booted | undefined

afterEach(async () => {
  await booted?.stop()
  booted = undefined
})

const call = (b: Booted, name: string, args: unknown, signal = new AbortController().signal) =>
  b.ctx.tools.execute({ callId: 'c1', name, arguments: JSON.stringify(args), signal })

describe('server-everything over stdio', () => {
  // One server for the calls that leave it as it was (a start costs a node process loading the whole server); the
  // tests that change the config or stop it have their own.
  let shared: Booted
  beforeAll(async () => {
    shared = await bootMcp({ servers: { everything: EVERYTHING } })
    await shared.ctx.mcp.ready(process.cwd())
  })
  afterAll(() => shared.stop())

  test("its tools are offered as mcp__everything__<tool> with the server's schema, and calls reach it", async () => {
    const booted = shared
    const names = booted.ctx.tools.names()
    expect(names).toContain('mcp__everything__echo')
    expect(names).toContain('mcp__everything__get-sum')
    const echo = booted.ctx.tools.schemas().find((tool) => tool.name === 'mcp__everything__echo')!
    expect(echo.description).toMatch(/^\[MCP server everything\] /)
    expect(JSON.stringify(echo.parameters)).toContain('"message"')

    const echoed = await call(booted, 'mcp__everything__echo', { message: 'hello from keel' })
    expect(echoed.isError).toBe(false)
    expect(textOf(echoed)).toContain('hello from keel')
    const sum = await call(booted, 'mcp__everything__get-sum', { a: 2, b: 40 })
    expect(textOf(sum)).toContain('42')
    // Arguments are checked against the server's JSON Schema before anything is sent.
    const bad = await call(booted, 'mcp__everything__get-sum', { a: 'two', b: 40 })
    expect(bad.isError).toBe(true)
    expect(textOf(bad)).toMatch(/a: must be a number/)

    const status = booted.ctx.mcp.status()
    expect(status).toMatchObject([{ name: 'everything', transport: 'stdio', state: 'ready', source: 'settings' }])
    expect(status[0]!.tools).toContain('mcp__everything__echo')
  })

  test('an image result becomes an image block; structured content and resources become text', async () => {
    const booted = shared
    const image = await call(booted, 'mcp__everything__get-tiny-image', {})
    expect(image.isError).toBe(false)
    const block = image.content.find((b) => b.type === 'image')
    expect(block?.mediaType).toBe('image/png')
    expect(Buffer.from(block!.data, 'base64').subarray(1, 4).toString()).toBe('PNG')
    const resource = await call(booted, 'mcp__everything__get-resource-reference', {
      resourceType: 'Text',
      resourceId: 1,
    })
    expect(textOf(resource)).toMatch(/\[resource [a-z]+:\/\/\S+\]/)
  })

  test('cancelling a long-running call returns at once and the server keeps serving', async () => {
    const booted = shared
    const controller = new AbortController()
    const pending = call(
      booted,
      'mcp__everything__trigger-long-running-operation',
      { duration: 60, steps: 60 },
      controller.signal,
    )
    setTimeout(() => controller.abort(new Error('cancelled')), 200)
    const result = await pending
    expect(result.isError).toBe(true)
    expect(textOf(result)).toMatch(/aborted|cancelled/)
    expect(textOf(await call(booted, 'mcp__everything__echo', { message: 'still here' }))).toContain('still here')
  })

  test('a call past the per-call timeout is a clear error, not a hung turn', async () => {
    booted = await bootMcp({ servers: { everything: EVERYTHING }, callTimeoutMs: 300 })
    await booted.ctx.mcp.ready(process.cwd())
    const result = await call(booted, 'mcp__everything__trigger-long-running-operation', { duration: 30, steps: 3 })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain(
      'mcp server everything: trigger-long-running-operation did not answer within 300 ms',
    )
  })

  test('disposing the plugin stops the server process and removes its tools', async () => {
    booted = await bootMcp({ servers: { everything: EVERYTHING } })
    await booted.ctx.mcp.ready(process.cwd())
    expect(booted.ctx.tools.names().some((name) => name.startsWith('mcp__'))).toBe(true)
    const pid = booted.ctx.mcp.status()[0]!.pid!
    expect(alive(pid)).toBe(true)
    const tools = booted.ctx.tools
    await booted.stop()
    booted = undefined
    expect(tools.names().some((name) => name.startsWith('mcp__'))).toBe(false)
    await waitFor(() => !alive(pid), 'the server process to end')
  })
})

describe('servers that fail', () => {
  test('a server that cannot start is one warning; the others start; no tools of it are offered', async () => {
    booted = await bootMcp({
      servers: {
        missing: { command: '/nonexistent/keel-mcp-server' },
        broken: { ...FAULTY, env: { FAULTY_FAIL_AT_START: '1' } },
        faulty: FAULTY,
      },
    })
    await booted.ctx.mcp.ready(process.cwd())
    const byName = Object.fromEntries(booted.ctx.mcp.status().map((s) => [s.name, s]))
    expect(byName.missing!.state).toBe('failed')
    expect(byName.broken!.state).toBe('failed')
    expect(byName.broken!.error).toContain('missing database url')
    expect(byName.faulty!.state).toBe('ready')
    expect(booted.warnings.filter((w) => w.includes('failed to start'))).toHaveLength(2)
    expect(booted.ctx.tools.names().filter((name) => name.startsWith('mcp__'))).toEqual([
      'mcp__faulty__crash',
      'mcp__faulty__hang',
      'mcp__faulty__grow',
    ])
  })

  test('a server that dies mid-call gives a clear error result and a warning; a later call says it died', async () => {
    booted = await bootMcp({ servers: { faulty: FAULTY } })
    await booted.ctx.mcp.ready(process.cwd())
    const result = await call(booted, 'mcp__faulty__crash', {})
    expect(result.isError).toBe(true)
    expect(textOf(result)).toMatch(/mcp server faulty closed the connection during the call/)
    expect(booted.warnings.some((w) => /mcp server faulty stopped/.test(w))).toBe(true)
    expect(booted.ctx.mcp.status()[0]!.state).toBe('closed')
    const later = await call(booted, 'mcp__faulty__hang', {})
    expect(later.isError).toBe(true)
    expect(textOf(later)).toMatch(/^Error: mcp server faulty died earlier in this session: the connection closed/)
  })

  test('a tool that hangs past the timeout is an error result and the server stays usable', async () => {
    booted = await bootMcp({ servers: { faulty: { ...FAULTY, timeout: 300 } } })
    await booted.ctx.mcp.ready(process.cwd())
    const result = await call(booted, 'mcp__faulty__hang', {})
    expect(textOf(result)).toContain('hang did not answer within 300 ms')
    expect(booted.ctx.mcp.status()[0]!.state).toBe('ready')
  })

  test('tools/list_changed updates the tools offered for the next request', async () => {
    booted = await bootMcp({ servers: { faulty: FAULTY } })
    await booted.ctx.mcp.ready(process.cwd())
    expect(booted.ctx.tools.get('mcp__faulty__extra')).toBeUndefined()
    await call(booted, 'mcp__faulty__grow', {})
    const b = booted
    await waitFor(() => b.ctx.tools.get('mcp__faulty__extra'), 'the new tool', 10_000)
    expect(textOf(await call(booted, 'mcp__faulty__extra', { word: 'hi' }))).toBe('extra hi')
  })
})
