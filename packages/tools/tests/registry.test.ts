import { afterEach, describe, expect, test } from 'vitest'
import { Context } from 'cordis'
import { Type } from 'typebox'
import * as toolsPlugin from '@keel/tools'
import { defineTool, pathOf } from '@keel/tools'
import { waitFor } from '../../../test-support/harness.ts'

let ctx: Context | undefined
afterEach(async () => {
  await ctx?.stop().catch(() => {})
  ctx = undefined
})

async function registry() {
  ctx = new Context()
  ctx.plugin(toolsPlugin)
  await ctx.start()
  await waitFor(() => ctx!.get('tools'))
  return ctx
}

const echo = defineTool({
  name: 'echo',
  description: 'Repeats its text.',
  parameters: Type.Object(
    { text: Type.String(), times: Type.Optional(Type.Integer({ minimum: 1 })) },
    { additionalProperties: false },
  ),
  execute: (args) => args.text.repeat(args.times ?? 1),
  presentCall: (args) => ({ title: `echo ${args.text}`, kind: 'other', rawInput: args }),
})

const signal = () => new AbortController().signal

describe('ctx.tools', () => {
  test('registration is an effect of the registering plugin: dispose removes the tool, reload restores it', async () => {
    const c = await registry()
    const plugin = {
      name: 'echo-plugin',
      inject: ['tools'],
      apply: (inner: Context) => {
        inner.tools.register(echo)
      },
    }
    const fork = c.plugin(plugin)
    await waitFor(() => c.tools.get('echo'))
    fork.dispose()
    expect(c.tools.get('echo')).toBeUndefined()
    c.plugin(plugin)
    await waitFor(() => c.tools.get('echo'))
    expect(c.tools.names()).toEqual(['echo'])
  })

  test('schemas() sends exactly name, description and the JSON Schema; except hides tools', async () => {
    const c = await registry()
    c.tools.register(echo)
    expect(c.tools.schemas()).toEqual([{ name: 'echo', description: 'Repeats its text.', parameters: echo.parameters }])
    expect(c.tools.schemas(['echo'])).toEqual([])
  })

  test('a duplicate name is refused', async () => {
    const c = await registry()
    c.tools.register(echo)
    expect(() => c.tools.register(echo)).toThrow(/already registered/)
  })

  test('execute never throws: every failure is an isError result the model can read', async () => {
    const c = await registry()
    c.tools.register(echo)
    c.tools.register(
      defineTool({
        name: 'boom',
        description: 'fails',
        parameters: Type.Object({}),
        execute: () => {
          throw new Error('it broke')
        },
      }),
    )
    const run = (name: string, args: unknown) =>
      c.tools.execute({ callId: 'c', name, arguments: args, signal: signal() })
    expect(await run('echo', '{"text":"ab","times":2}')).toEqual({
      isError: false,
      content: [{ type: 'text', text: 'abab' }],
    })
    expect(await run('echo', { text: 'parsed already' })).toMatchObject({ isError: false })
    expect(await run('nope', '{}')).toEqual({
      isError: true,
      content: [{ type: 'text', text: 'Error: unknown tool "nope"; available: echo, boom' }],
    })
    expect((await run('echo', '{"text":')).content[0]).toMatchObject({
      text: expect.stringMatching(/^Error: arguments are not valid JSON/),
    })
    expect((await run('echo', '{"text":1,"times":0,"extra":true}')).content[0]).toEqual({
      type: 'text',
      text: 'Error: invalid arguments:\nextra: is not an allowed property\ntext: must be a string\ntimes: must be >= 1',
    })
    expect(await run('boom', '{}')).toEqual({ isError: true, content: [{ type: 'text', text: 'Error: it broke' }] })
    const aborted = new AbortController()
    aborted.abort()
    expect(
      await c.tools.execute({ callId: 'c', name: 'echo', arguments: '{"text":"x"}', signal: aborted.signal }),
    ).toMatchObject({ isError: true })
  })

  test('present() uses presentCall, and falls back to the tool name for arguments that do not validate', async () => {
    const c = await registry()
    c.tools.register(echo)
    expect(c.tools.present('echo', '{"text":"hi"}')).toEqual({
      title: 'echo hi',
      kind: 'other',
      rawInput: { text: 'hi' },
    })
    expect(c.tools.present('echo', '{"bad":1}')).toEqual({ title: 'echo', kind: 'other', rawInput: '{"bad":1}' })
  })

  test("a schema the validator cannot compile (an MCP server's bad pattern) leaves checking to the tool instead of throwing", async () => {
    const c = await registry()
    const odd = { type: 'object', properties: { x: { type: 'string', pattern: '(' } } } as unknown as ReturnType<
      typeof Type.Object
    >
    c.tools.register(
      defineTool({
        name: 'odd',
        description: 'odd schema',
        parameters: odd,
        execute: (args) => `got ${JSON.stringify(args)}`,
      }),
    )
    expect(await c.tools.execute({ callId: 'c', name: 'odd', arguments: '{"x":"y"}', signal: signal() })).toEqual({
      isError: false,
      content: [{ type: 'text', text: 'got {"x":"y"}' }],
    })
  })

  test('paths render the way a model reads them', () => {
    expect(pathOf('/todos/0/status')).toBe('todos[0].status')
    expect(pathOf('', 'todos')).toBe('todos')
    expect(pathOf('')).toBe('arguments')
  })
})
