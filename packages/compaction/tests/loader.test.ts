import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import type { Context } from 'cordis'
import * as compaction from '@keel/compaction'
import { ScriptedAdapter } from '@keel/llm'
import { boot, DEFAULT_COMPOSITION, KeelLoader, shutdown } from '@keel/cli'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-compaction-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let ctx: Context | undefined
let keel: Keel | undefined
const previousHome = process.env.KEEL_HOME
afterEach(async () => {
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
  if (ctx) await shutdown(ctx)
  ctx = undefined
  await keel?.dispose()
  keel = undefined
})

const DEFAULTS: compaction.Config = {
  auto: true,
  threshold: 0.8,
  contextWindow: 0,
  keepTurns: 2,
  maxSummaryTokens: 2000,
}

const CORE = `- id: session\n  name: '@keel/session'\n- id: llm\n  name: '@keel/llm'\n- id: tools\n  name: '@keel/tools'\n- id: agent\n  name: '@keel/agent'\n- id: shell\n  name: '@keel/shell'\n- id: todo\n  name: '@keel/todo'\n`

function composition(config: string): string {
  const dir = mkdtempSync(join(scratch, 'comp-'))
  const path = join(dir, 'keel.yml')
  writeFileSync(path, `${CORE}- id: compaction\n  name: '@keel/compaction'\n${config ? `  config:\n${config}` : ''}`)
  return path
}

describe('@keel/compaction through the real cordis Loader', () => {
  test('the module is a named-export plugin that survives unwrapExports', () => {
    expect('default' in compaction).toBe(false)
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(compaction)).toBe(compaction)
    expect(compaction.inject).toEqual(['agents', 'tools'])
  })

  test('it loads from a composition with its config and defaults, and the file is never rewritten', async () => {
    const path = composition('    threshold: 0.5\n    keepTurns: 3\n')
    const before = readFileSync(path, 'utf8')
    ctx = await boot({ composition: path, require: ['compaction'] })
    expect(ctx.compaction.config).toEqual({ ...DEFAULTS, threshold: 0.5, keepTurns: 3 })
    await new Promise((done) => setTimeout(done, 20))
    expect(readFileSync(path, 'utf8')).toBe(before)
  })

  test('the default composition loads it', async () => {
    expect(readFileSync(DEFAULT_COMPOSITION, 'utf8')).toMatch(/name: ["']@keel\/compaction["']/)
  })

  test('a bad value is a clear load error naming the key', async () => {
    await expect(boot({ composition: composition('    threshold: lots\n') })).rejects.toThrow(/threshold/)
    await expect(boot({ composition: composition('    keepTurns: 0\n') })).rejects.toThrow(/keepTurns/)
  })

  test('HMR: disposing the plugin removes ctx.compaction and automatic compaction; reloading brings both back', async () => {
    const steps = [
      { text: 'one', usage: { input: 100, output: 1 } },
      { text: 'two', usage: { input: 5000, output: 1 } },
      { text: 'three', usage: { input: 5000, output: 1 } },
      { text: 'SUMMARY' },
      { text: 'four', usage: { input: 100, output: 1 } },
    ]
    keel = await makeKeel({ steps, contextWindow: 6000 })
    const fork = keel.ctx.plugin(compaction, DEFAULTS)
    await keel.ctx.lifecycle.flush()
    expect(keel.ctx.get('compaction')).toBeTruthy()
    fork.dispose()
    await keel.ctx.lifecycle.flush()
    expect(keel.ctx.get('compaction')).toBeUndefined()
    const agent = keel.agent()
    await agent.prompt('p1')
    await agent.prompt('p2')
    await agent.prompt('p3') // over the threshold, but nothing is listening
    expect(agent.session.events.some((event) => event.type === 'compaction/start')).toBe(false)
    keel.ctx.plugin(compaction, DEFAULTS)
    await keel.ctx.lifecycle.flush()
    expect(keel.ctx.get('compaction')).toBeTruthy()
    await agent.prompt('p4')
    expect(agent.session.events.filter((event) => event.type === 'compaction/start')).toHaveLength(1)
    expect(keel.model.requests[4]!.messages[0]).toMatchObject({ source: 'compaction' })
  })
})

describe('a Loader-booted Keel', () => {
  test("compacts with the composition's contextWindow and keepTurns (the scripted model reports no window)", async () => {
    process.env.KEEL_HOME = scratch
    ctx = await boot({
      composition: composition('    contextWindow: 6000\n    keepTurns: 1\n'),
      require: ['compaction'],
    })
    const model = new ScriptedAdapter({
      steps: [
        { text: 'Looked around.', usage: { input: 5500, output: 5 } },
        { text: 'Earlier: the user asked to look around.' },
        { text: 'Carrying on.' },
      ],
    })
    const agent = ctx.agents.create({ cwd: scratch, model })
    await agent.prompt('look around')
    expect((await agent.prompt('carry on')).reason).toBe('completed')
    const types = agent.session.events.map((event) => event.type)
    const at = types.indexOf('compaction/start')
    expect(types.slice(at - 3, at + 3)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'compaction/start',
      'user/message',
      'compaction/end',
    ])
    expect(agent.session.events[at]!.data).toMatchObject({ turn: 2, reason: 'auto' })
    expect(model.requests[2]!.messages.map((message) => message.role)).toEqual(['user', 'user'])
    ctx.agents.close(agent)
  })
})
