// What a server can make every request carry is capped, tool by tool (issue 33): a count cap, a schema size and
// depth cap, an invalid schema that drops its own tool only; an image sent once; roots offered. Against a raw
// NDJSON server (fixtures/hostile-server.mjs).
import { realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, test } from 'vitest'
import { MAX_TOOLS } from '../src/limits.ts'
import { bootMcp, hostile, textOf, type Booted } from './support.ts'

let booted: Booted | undefined
afterEach(async () => {
  await booted?.stop()
  booted = undefined
})

async function start(mode: string, env?: Record<string, string>) {
  booted = await bootMcp({ servers: { h: hostile(mode, env) } })
  await booted.ctx.mcp.ready(tmpdir())
  return booted
}

const call = (b: Booted, name: string, args: unknown = {}) =>
  b.ctx.tools.execute({ callId: 'c', name, arguments: JSON.stringify(args), signal: new AbortController().signal })

test('5,000 tools: the first are kept, the rest dropped with one warning naming some', async () => {
  const b = await start('many')
  const names = b.ctx.tools.names().filter((name) => name.startsWith('mcp__h__'))
  expect(names).toHaveLength(MAX_TOOLS)
  expect(b.warnings).toHaveLength(1)
  expect(b.warnings[0]).toMatch(
    /^mcp server h: a tool was left out: 4900 more tools past the limit of 100 tools .*\("t100", "t101"/,
  )
})

test.each([
  ['deep', 'its input schema nests deeper than 64 levels'],
  ['badschema', 'not a valid tool: inputSchema.required'],
  ['bigschema', 'its input schema is'],
])('%s: the offending tool alone is dropped, named; the server and its good tool work', async (mode, why) => {
  const b = await start(mode)
  expect(b.ctx.mcp.status()[0]).toMatchObject({ state: 'ready', tools: ['mcp__h__echo'] })
  expect(b.warnings).toHaveLength(1)
  expect(b.warnings[0]).toContain(
    `mcp server h: a tool was left out: "${mode === 'badschema' ? 'bad' : mode === 'deep' ? 'deep' : 'big'}" (${why}`,
  )
  expect(textOf(await call(b, 'mcp__h__echo', { text: 'hi' }))).toBe('echo hi')
  // Every request still carries small schemas only.
  expect(JSON.stringify(b.ctx.tools.schemas()).length).toBeLessThan(100_000)
})

test('an image is sent once, not again as the JSON of structuredContent', async () => {
  const b = await start('image')
  const result = await call(b, 'mcp__h__echo')
  expect(result.content.map((block) => block.type)).toEqual(['image'])
})

test("roots: the server that asks is given the session's working directory", async () => {
  const b = await start('roots')
  const roots = JSON.parse(textOf(await call(b, 'mcp__h__echo')))
  expect(roots).toEqual([{ uri: pathToFileURL(tmpdir()).href, name: realpathSync(tmpdir()).split('/').pop() }])
})

test('many calls in one turn add no listener to the turn signal (no MaxListenersExceededWarning)', async () => {
  const b = await start('plain')
  const turn = new AbortController()
  const warnings: string[] = []
  const onWarning = (warning: Error) => warnings.push(warning.name)
  process.on('warning', onWarning)
  try {
    for (let i = 0; i < 15; i++)
      await b.ctx.tools.execute({ callId: `c${i}`, name: 'mcp__h__echo', arguments: '{}', signal: turn.signal })
    await new Promise((done) => setImmediate(done))
    expect(warnings).not.toContain('MaxListenersExceededWarning')
  } finally {
    process.off('warning', onWarning)
  }
})
