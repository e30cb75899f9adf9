// The answers a person gives, through the real agent loop: the personal settings file (and its .gitignore line),
// rules held for the session (on its log, folded back when it is reopened), a denial with a sentence the model
// reads, and mode changes on the log.
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Context, Service } from 'cordis'
import { Type } from 'typebox'
import { afterEach, describe, expect, it } from 'vitest'
import * as permissionsPlugin from '@keel/permissions'
import type { PermissionAnswer, PermissionAsk, PermissionMode } from '@keel/permissions'
import { defineTool } from '@keel/tools'
import type { ScriptStep } from '@keel/llm'
import type { SessionEvent } from '@keel/session'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'

class FakeSandbox extends Service {
  constructor(ctx: Context) {
    super(ctx, 'sandbox', true)
  }
  async status() {
    return { available: true as const }
  }
}

/** A bash stand-in that records what it ran (no process: the policy is what is tested here). */
const ran: string[] = []
const fakeBash = {
  name: 'fake-bash',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register(
      defineTool({
        name: 'bash',
        description: 'fake bash',
        parameters: Type.Object({ command: Type.String() }),
        access: (a) => ({ kind: 'execute', command: a.command }),
        execute: (a) => {
          ran.push(a.command)
          return `ran ${a.command}`
        },
      }),
    )
  },
}

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
  ran.length = 0
})

async function start(steps: ScriptStep[], mode: PermissionMode = 'ask') {
  keel = await makeKeel({
    steps,
    shell: false,
    plugins: [
      [permissionsPlugin, { mode, allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      [fakeBash],
      [FakeSandbox],
    ],
  })
  await waitFor(() => keel!.ctx.get('permissions') && keel!.ctx.get('tools')?.get('bash'), 'plugins')
  mkdirSync(join(keel.cwd, '.git'))
  return keel
}

const bash = (command: string, id: string) => ({ toolCalls: [{ id, name: 'bash', arguments: { command } }] })
const decisions = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'permission/decision').map((e) => (e as SessionEvent<'permission/decision'>).data)

describe('answers', () => {
  it('"always" on a piped test command saves the prefix to .keel/settings.local.json, git-ignores it in .keel/.gitignore, and the next variant runs unasked', async () => {
    const k = await start([
      bash('npm test 2>&1 | tail -3', 'b1'),
      bash('npm test -- --run 2>&1 | grep Tests', 'b2'),
      { text: 'done' },
    ])
    const asks: PermissionAsk[] = []
    k.ctx.permissions.setAsker(async (ask) => {
      asks.push(ask)
      return { decision: 'allow', scope: 'always' }
    })
    const agent = k.agent()
    await agent.prompt('go')
    expect(asks).toHaveLength(1)
    expect(asks[0]!.suggestedRules).toEqual(['bash(npm test:*)'])
    expect(asks[0]!.files).toEqual({
      local: join(k.cwd, '.keel', 'settings.local.json'),
      project: join(k.cwd, '.keel', 'settings.json'),
    })
    const local = join(k.cwd, '.keel', 'settings.local.json')
    expect(JSON.parse(readFileSync(local, 'utf8'))).toEqual({ permissions: { allow: ['bash(npm test:*)'] } })
    expect(existsSync(join(k.cwd, '.keel', 'settings.json'))).toBe(false)
    expect(readFileSync(join(k.cwd, '.keel', '.gitignore'), 'utf8')).toBe('settings.local.json\n')
    expect(existsSync(join(k.cwd, '.gitignore'))).toBe(false)
    expect(ran).toEqual(['npm test 2>&1 | tail -3', 'npm test -- --run 2>&1 | grep Tests'])
    expect(decisions(agent.session.events).map((d) => d.scope)).toEqual(['always', 'rule'])
  })

  it('"allow for this session" holds the rule on the log: the session runs the next one unasked, reopened too; another session asks', async () => {
    const k = await start([
      bash('make build', 'b1'),
      bash('make build', 'b2'),
      { text: 'one' },
      bash('make build', 'b3'),
      { text: 'two' },
      bash('make build', 'b4'),
      { text: 'three' },
    ])
    const answers: PermissionAnswer[] = [
      { decision: 'allow', scope: 'session' },
      { decision: 'deny', scope: 'once' },
    ]
    const asks: PermissionAsk[] = []
    k.ctx.permissions.setAsker(async (ask) => {
      asks.push(ask)
      return answers.shift()!
    })
    const agent = k.agent()
    await agent.prompt('go')
    expect(asks.map((a) => a.sessionRules)).toEqual([['bash(make build:*)']])
    expect(decisions(agent.session.events)).toEqual([
      { callId: 'b1', decision: 'allow', scope: 'session', rule: 'bash(make build:*)', rules: ['bash(make build:*)'] },
      { callId: 'b2', decision: 'allow', scope: 'rule', rule: 'bash(make build:*)' },
    ])
    // Nothing was written to a settings file.
    expect(existsSync(join(k.cwd, '.keel'))).toBe(false)
    // Reopened, with the service's memory of it gone (as in a new run): the rule is folded back from the log.
    const id = agent.id
    k.ctx.agents.close(agent)
    ;(k.ctx.permissions as unknown as { held: Map<string, unknown> }).held.clear()
    const { agent: reopened } = k.ctx.agents.resume(id, { model: k.model })
    await reopened.prompt('again')
    expect(decisions(reopened.session.events).at(-1)).toEqual({
      callId: 'b3',
      decision: 'allow',
      scope: 'rule',
      rule: 'bash(make build:*)',
    })
    // Another session holds no such rule.
    const other = k.agent()
    await other.prompt('elsewhere')
    expect(asks).toHaveLength(2)
    expect(ran).toEqual(['make build', 'make build', 'make build'])
  })

  it('a denial with a sentence puts the sentence in the tool result the model reads next', async () => {
    const k = await start([bash('rm -rf dist', 'b1'), { text: 'ok' }])
    k.ctx.permissions.setAsker(async () => ({
      decision: 'deny',
      scope: 'once',
      message: 'keep dist, clean build/ instead',
    }))
    const agent = k.agent()
    await agent.prompt('tidy up')
    expect(ran).toEqual([])
    expect(decisions(agent.session.events)).toEqual([
      { callId: 'b1', decision: 'deny', scope: 'once', message: 'keep dist, clean build/ instead' },
    ])
    const next = k.model.requests.at(-1)!
    const result = next.messages.at(-1)!
    expect(result.role).toBe('tool')
    const block = result.content[0] as { type: string; content: { type: string; text?: string }[] }
    expect(textOfContent(block.content)).toContain('the user declined it and said: "keep dist, clean build/ instead"')
  })

  it('setMode applies at once and is on the log of the sessions it names', async () => {
    const k = await start([bash('make build', 'b1'), { text: 'ok' }])
    const heard: string[] = []
    k.ctx.on('permission/mode', (mode, previous) => heard.push(`${previous}→${mode}`))
    const agent = k.agent()
    k.ctx.permissions.setMode('auto', [agent.session])
    await agent.prompt('go')
    expect(ran).toEqual(['make build'])
    expect(heard).toEqual(['ask→auto'])
    const types = agent.session.events.map((e) => e.type)
    expect(types.indexOf('permission/mode')).toBeLessThan(types.indexOf('turn/start'))
    expect(agent.session.events.find((e) => e.type === 'permission/mode')?.data).toEqual({
      mode: 'auto',
      previous: 'ask',
    })
    expect(permissionsPlugin.nextMode('ask')).toBe('auto')
    expect(permissionsPlugin.nextMode('read-only')).toBe('plan')
    expect(permissionsPlugin.nextMode('plan')).toBe('ask')
    expect(permissionsPlugin.nextMode('yolo')).toBe('ask')
  })
})
