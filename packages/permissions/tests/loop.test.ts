// The policy inside the real agent loop: the scripted model, the real tools, dev invariants on, and every decision
// checked on the log.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { type Context, Service } from 'cordis'
import { Type } from 'typebox'
import { afterEach, describe, expect, it } from 'vitest'
import * as fsPlugin from '@keel/fs'
import * as permissionsPlugin from '@keel/permissions'
import type { PermissionAnswer, PermissionAsk, PermissionMode } from '@keel/permissions'
import * as subagentPlugin from '@keel/subagent'
import { defineTool } from '@keel/tools'
import type { ScriptStep } from '@keel/llm'
import type { SessionEvent } from '@keel/session'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'

/** Stands in for @keel/sandbox: says it is available; the probe tool below reports the level it was given. */
class FakeSandbox extends Service {
  constructor(ctx: Context) {
    super(ctx, 'sandbox', true)
  }
  async status() {
    return { available: true as const }
  }
}

const probe = {
  name: 'probe-plugin',
  inject: ['tools'],
  apply(ctx: Context) {
    ctx.tools.register(
      defineTool({
        name: 'probe',
        description: 'reports its sandbox level',
        parameters: Type.Object({ command: Type.String() }),
        access: (args) => ({ kind: 'execute', command: args.command }),
        execute: (_args, exec) => `sandbox=${exec.sandbox}`,
      }),
    )
  },
}

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function start(
  steps: ScriptStep[],
  options: {
    mode?: PermissionMode
    allow?: string[]
    deny?: string[]
    sandbox?: boolean
    subagent?: boolean
    shell?: boolean
  } = {},
) {
  keel = await makeKeel({
    steps,
    shell: options.shell,
    plugins: [
      [
        permissionsPlugin,
        {
          mode: options.mode ?? 'auto',
          allow: options.allow ?? [],
          deny: options.deny ?? [],
          sandbox: { allowedDomains: [] },
        },
      ],
      [fsPlugin, {}],
      [probe],
      ...(options.sandbox === false ? [] : [[FakeSandbox] as [unknown]]),
      ...(options.subagent ? [[subagentPlugin, { maxDepth: 1, maxConcurrent: 2 }] as [unknown, unknown]] : []),
    ],
  })
  await waitFor(
    () =>
      keel!.ctx.get('permissions') &&
      keel!.ctx.get('tools')?.get('write') &&
      (!options.subagent || keel!.ctx.get('subagents')),
    'plugins',
  )
  return keel
}

const call = (name: string, args: unknown, id?: string) => ({
  toolCalls: [{ ...(id ? { id } : {}), name, arguments: args }],
})
const permissionEvents = (events: readonly SessionEvent[]) =>
  events
    .filter((e) => e.type.startsWith('permission/') || e.type === 'tool/call' || e.type === 'tool/result')
    .map((e) =>
      e.type === 'tool/result'
        ? `result ${e.data.isError ? 'error' : 'ok'}: ${textOfContent(e.data.content).slice(0, 200)}`
        : e.type === 'tool/call'
          ? `call ${e.data.name}`
          : `${e.type} ${JSON.stringify(e.data)}`,
    )

describe('the permission hook in the agent loop', () => {
  it('auto: a write inside the cwd runs, one outside is denied by the mode; decisions sit between call and result', async () => {
    const k = await start([
      call('write', { path: 'a.txt', content: 'inside\n' }, 'w1'),
      call('write', { path: '/tmp/keel-perm-outside.txt', content: 'outside\n' }, 'w2'),
      { text: 'done' },
    ])
    const agent = k.agent()
    expect((await agent.prompt('go')).reason).toBe('completed')
    expect(readFileSync(join(k.cwd, 'a.txt'), 'utf8')).toBe('inside\n')
    expect(existsSync('/tmp/keel-perm-outside.txt')).toBe(false)
    const log = permissionEvents(agent.session.events)
    expect(log[0]).toBe('call write')
    expect(log[1]).toBe('permission/decision {"callId":"w1","decision":"allow","scope":"mode","mode":"auto"}')
    expect(log[2]).toMatch(/^result ok/)
    expect(log[3]).toBe('call write')
    expect(log[4]).toBe('permission/decision {"callId":"w2","decision":"deny","scope":"mode","mode":"auto"}')
    expect(log[5]).toMatch(/^result error: Error: permission to run write was declined: denied by auto mode/)
    const denial = agent.session.events.findLast((e) => e.type === 'tool/result')!
    expect(textOfContent((denial as SessionEvent<'tool/result'>).data.content)).toMatch(
      /outside the working directory .*only --mode yolo/,
    )
  })

  it('a write through a symlink that leads out of the cwd counts as outside, even a dangling one', async () => {
    const k = await start([
      call('write', { path: 'out/x.txt', content: 'x' }, 'w1'),
      call('write', { path: 'dangling', content: 'x' }, 'w2'),
      { text: 'done' },
    ])
    const { symlinkSync, mkdtempSync } = await import('node:fs')
    const elsewhere = mkdtempSync('/tmp/keel-perm-elsewhere-')
    symlinkSync(elsewhere, join(k.cwd, 'out'))
    symlinkSync(join(elsewhere, 'made-by-link'), join(k.cwd, 'dangling'))
    const agent = k.agent()
    await agent.prompt('go')
    const decisions = agent.session.events
      .filter((e) => e.type === 'permission/decision')
      .map((e) => (e as SessionEvent<'permission/decision'>).data.decision)
    expect(decisions).toEqual(['deny', 'deny'])
    expect(existsSync(join(elsewhere, 'x.txt'))).toBe(false)
    expect(existsSync(join(elsewhere, 'made-by-link'))).toBe(false)
  })

  it('passes the sandbox level of the mode to the tool', async () => {
    for (const [mode, level] of [
      ['read-only', 'read-only'],
      ['ask', 'workspace'],
      ['auto', 'workspace'],
      ['yolo', 'off'],
    ] as const) {
      const k = await start([call('probe', { command: 'ls' }), { text: 'done' }], { mode })
      const agent = k.agent()
      await agent.prompt('go')
      const result = agent.session.events.find((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>
      expect([mode, textOfContent(result.data.content)]).toEqual([mode, `sandbox=${level}`])
      await k.dispose()
      keel = undefined
    }
  })

  it('ask: the asker sees the call in full; allow once runs it; deny once returns an error naming the user', async () => {
    const k = await start(
      [
        call('write', { path: 'a.txt', content: 'first line\nsecond line\n' }, 'w1'),
        call('write', { path: 'b.txt', content: 'no' }, 'w2'),
        { text: 'done' },
      ],
      { mode: 'ask' },
    )
    const asks: PermissionAsk[] = []
    const answers: PermissionAnswer[] = [
      { decision: 'allow', scope: 'once' },
      { decision: 'deny', scope: 'once' },
    ]
    k.ctx.permissions.setAsker(async (ask) => {
      asks.push(ask)
      return answers.shift()!
    })
    const agent = k.agent()
    await agent.prompt('go')
    expect(asks[0]).toMatchObject({
      sessionId: agent.id,
      callId: 'w1',
      tool: 'write',
      summary: 'write a.txt',
      detail: 'first line\nsecond line\n',
      suggestedRules: ['write(a.txt)'],
      sessionRules: ['write'],
    })
    expect(readFileSync(join(k.cwd, 'a.txt'), 'utf8')).toBe('first line\nsecond line\n')
    expect(existsSync(join(k.cwd, 'b.txt'))).toBe(false)
    expect(permissionEvents(agent.session.events)).toEqual([
      'call write',
      'permission/request {"callId":"w1","tool":"write","summary":"write a.txt"}',
      'permission/decision {"callId":"w1","decision":"allow","scope":"once"}',
      expect.stringMatching(/^result ok/),
      'call write',
      'permission/request {"callId":"w2","tool":"write","summary":"write b.txt"}',
      'permission/decision {"callId":"w2","decision":"deny","scope":"once"}',
      'result error: Error: permission to run write was declined: the user declined it. Do not retry the same call; change course or ask the user.',
    ])
  })

  it('a write outside the cwd runs where the mode and the person allow it: in yolo, and in ask once allowed; auto and a declined ask write nothing', async () => {
    const outside = mkdtempSync(join(homedir(), '.keel-perm-outside-'))
    try {
      const target = (name: string) => join(outside, name)
      for (const [mode, answer, name] of [
        ['yolo', undefined, 'yolo.txt'],
        ['ask', 'allow', 'asked.txt'],
        ['ask', 'deny', 'declined.txt'],
        ['auto', undefined, 'auto.txt'],
      ] as const) {
        const k = await start([call('write', { path: target(name), content: mode }, 'w'), { text: 'done' }], { mode })
        if (answer) k.ctx.permissions.setAsker(async () => ({ decision: answer, scope: 'once' }))
        await k.agent().prompt('write outside')
        await keel!.dispose()
        keel = undefined
      }
      expect(readFileSync(target('yolo.txt'), 'utf8')).toBe('yolo')
      expect(readFileSync(target('asked.txt'), 'utf8')).toBe('ask')
      expect(existsSync(target('declined.txt'))).toBe(false)
      expect(existsSync(target('auto.txt'))).toBe(false)
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })

  it('"always" on the shared file saves the narrowest rule to <project root>/.keel/settings.json, keeps other keys, and applies it at once', async () => {
    const k = await start(
      [
        call('bash', { command: 'npm test -- --one' }, 'b1'),
        call('bash', { command: 'npm test -- --two' }, 'b2'),
        { text: 'done' },
      ],
      { mode: 'ask', shell: false },
    )
    // The project root is the nearest ancestor with .git; the agent works in a subfolder.
    mkdirSync(join(k.cwd, '.git'))
    mkdirSync(join(k.cwd, '.keel'))
    writeFileSync(
      join(k.cwd, '.keel', 'settings.json'),
      JSON.stringify({ model: 'x/y', permissions: { deny: ['bash(rm:*)'] } }),
    )
    const sub = join(k.cwd, 'pkg')
    mkdirSync(sub)
    k.ctx.tools.register(
      defineTool({
        name: 'bash',
        description: 'fake bash',
        parameters: Type.Object({ command: Type.String() }),
        access: (a) => ({ kind: 'execute', command: a.command }),
        execute: (a) => `ran ${a.command}`,
      }),
    )
    const asks: PermissionAsk[] = []
    k.ctx.permissions.setAsker(async (ask) => {
      asks.push(ask)
      return { decision: 'allow', scope: 'always', file: 'project' }
    })
    const agent = k.agent({ cwd: sub })
    await agent.prompt('go')
    expect(asks.map((a) => a.suggestedRules)).toEqual([['bash(npm test:*)']])
    const file = join(k.cwd, '.keel', 'settings.json')
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      model: 'x/y',
      permissions: { deny: ['bash(rm:*)'], allow: ['bash(npm test:*)'] },
    })
    const decisions = agent.session.events
      .filter((e) => e.type === 'permission/decision')
      .map((e) => (e as SessionEvent<'permission/decision'>).data)
    expect(decisions).toEqual([
      { callId: 'b1', decision: 'allow', scope: 'always', rule: 'bash(npm test:*)', rules: ['bash(npm test:*)'], file },
      { callId: 'b2', decision: 'allow', scope: 'rule', rule: 'bash(npm test:*)' },
    ])
  }, 60_000)

  it('a settings file that is not JSON is never clobbered: the call runs once and a notice says why nothing was saved', async () => {
    const k = await start([call('write', { path: 'a.txt', content: 'x' }, 'w1'), { text: 'done' }], { mode: 'ask' })
    mkdirSync(join(k.cwd, '.keel'))
    writeFileSync(join(k.cwd, '.keel', 'settings.json'), '{ not json')
    const notices: string[] = []
    k.ctx.on('keel/notice', (notice) => notices.push(notice.text))
    k.ctx.permissions.setAsker(async () => ({ decision: 'allow', scope: 'always', file: 'project' }))
    const agent = k.agent()
    await agent.prompt('go')
    expect(readFileSync(join(k.cwd, '.keel', 'settings.json'), 'utf8')).toBe('{ not json')
    expect(readFileSync(join(k.cwd, 'a.txt'), 'utf8')).toBe('x')
    expect(notices).toEqual([expect.stringMatching(/settings\.json is not valid JSON .*nothing was saved/)])
  })

  it('pending() lists a waiting ask and answer() from anywhere settles it; the first answer wins', async () => {
    const k = await start([call('write', { path: 'a.txt', content: 'x' }, 'w1'), { text: 'done' }], { mode: 'ask' })
    let askerSignal: AbortSignal | undefined
    k.ctx.permissions.setAsker((_ask, signal) => {
      askerSignal = signal
      return new Promise(() => {})
    })
    const agent = k.agent()
    const turn = agent.prompt('go')
    await waitFor(() => k.ctx.permissions.pending().length === 1, 'the ask')
    expect(k.ctx.permissions.pending()[0]).toMatchObject({ sessionId: agent.id, callId: 'w1', tool: 'write' })
    expect(k.ctx.permissions.answer(agent.id, 'nope', { decision: 'allow', scope: 'once' })).toBe(false)
    expect(k.ctx.permissions.answer(agent.id, 'w1', { decision: 'allow', scope: 'once' })).toBe(true)
    expect(k.ctx.permissions.answer(agent.id, 'w1', { decision: 'deny', scope: 'once' })).toBe(false)
    expect((await turn).reason).toBe('completed')
    expect(askerSignal?.aborted).toBe(true)
    expect(k.ctx.permissions.pending()).toEqual([])
    expect(readFileSync(join(k.cwd, 'a.txt'), 'utf8')).toBe('x')
  })

  it('cancelling the turn while a person is asked ends the ask and the call never runs', async () => {
    const k = await start([call('write', { path: 'a.txt', content: 'x' }, 'w1'), { text: 'done' }], { mode: 'ask' })
    k.ctx.permissions.setAsker(() => new Promise(() => {}))
    const agent = k.agent()
    const turn = agent.prompt('go')
    await waitFor(() => k.ctx.permissions.pending().length === 1, 'the ask')
    agent.cancel()
    expect((await turn).reason).toBe('aborted')
    expect(k.ctx.permissions.pending()).toEqual([])
    expect(existsSync(join(k.cwd, 'a.txt'))).toBe(false)
  })

  it('no asker registered: an ask is a denial that says how to allow it', async () => {
    const k = await start([call('bash', { command: 'rm -rf build' }, 'b1'), { text: 'done' }], {
      mode: 'ask',
      shell: false,
    })
    k.ctx.tools.register(
      defineTool({
        name: 'bash',
        description: 'fake bash',
        parameters: Type.Object({ command: Type.String() }),
        access: (a) => ({ kind: 'execute', command: a.command }),
        execute: () => 'ran',
      }),
    )
    const agent = k.agent()
    await agent.prompt('go')
    const result = agent.session.events.find((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>
    expect(textOfContent(result.data.content)).toMatch(
      /declined: ask mode asks a person first .* there is no one to ask here; --allow 'bash\(rm -rf build\)' or --mode auto lets it run/,
    )
    expect(agent.session.events.some((e) => e.type === 'permission/request')).toBe(true)
  })

  it('without a sandbox: auto denies commands saying how to fix it, ask asks even for read-only commands; the reason is said once', async () => {
    const k = await start(
      [call('probe', { command: 'ls' }, 'p1'), call('probe', { command: 'ls' }, 'p2'), { text: 'done' }],
      { mode: 'auto', sandbox: false },
    )
    const notices: string[] = []
    k.ctx.on('keel/notice', (notice) => notices.push(notice.text))
    const agent = k.agent()
    await agent.prompt('go')
    const results = agent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => textOfContent((e as SessionEvent<'tool/result'>).data.content))
    expect(results).toEqual([
      expect.stringMatching(/sandbox is unavailable .*install bubblewrap, or run with --mode yolo/),
      expect.stringMatching(/install bubblewrap/),
    ])
    expect(notices).toHaveLength(1)
    expect(notices[0]).toMatch(/the sandbox is off: no sandbox plugin is loaded/)

    k.ctx.permissions.configure({ mode: 'ask' })
    const asks: PermissionAsk[] = []
    k.ctx.permissions.setAsker(async (ask) => {
      asks.push(ask)
      return { decision: 'allow', scope: 'once' }
    })
    k.model.script.steps.push(call('probe', { command: 'ls' }, 'p3'), { text: 'done' })
    await agent.prompt('again')
    expect(asks.map((a) => a.callId)).toEqual(['p3'])
    expect(asks[0]!.reason).toMatch(/sandbox is unavailable/)
    const last = agent.session.events.findLast((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>
    expect(textOfContent(last.data.content)).toBe('sandbox=off')
  })

  it('deny rules apply in every mode, yolo included', async () => {
    const k = await start([call('probe', { command: 'rm -rf /' }, 'p1'), { text: 'done' }], {
      mode: 'yolo',
      deny: ['probe(rm:*)'],
    })
    // A command rule is for bash; the probe tool matches by name only.
    k.ctx.permissions.configure({ deny: ['probe'] })
    const agent = k.agent()
    await agent.prompt('go')
    expect(permissionEvents(agent.session.events)).toEqual([
      'call probe',
      'permission/decision {"callId":"p1","decision":"deny","scope":"rule","rule":"probe"}',
      'result error: Error: permission to run probe was declined: denied by rule probe. Do not retry the same call; change course or ask the user.',
    ])
  })
})

describe('subagents', () => {
  it('inherit the mode and rules, and their asks reach the same asker with the child session id', async () => {
    const k = await start(
      [
        { toolCalls: [{ id: 't1', name: 'task', arguments: { description: 'write', prompt: 'write two files' } }] },
        { toolCalls: [{ id: 'c1', name: 'write', arguments: { path: 'child.txt', content: 'c' } }] },
        {
          toolCalls: [
            { id: 'c2', name: 'write', arguments: { path: '/tmp/keel-perm-child-outside.txt', content: 'c' } },
          ],
        },
        { text: 'child done' },
        { text: 'parent done' },
      ],
      { mode: 'ask', subagent: true },
    )
    const asks: PermissionAsk[] = []
    k.ctx.permissions.setAsker(async (ask) => {
      asks.push(ask)
      return { decision: ask.callId === 'c1' ? 'allow' : 'deny', scope: 'once' }
    })
    const agent = k.agent()
    await agent.prompt('delegate')
    const childId = (agent.session.events.find((e) => e.type === 'subagent/start') as SessionEvent<'subagent/start'>)
      .data.sessionId
    expect(asks.map((a) => [a.sessionId, a.callId, a.parent])).toEqual([
      [childId, 'c1', { sessionId: agent.id, callId: 't1' }],
      [childId, 'c2', { sessionId: agent.id, callId: 't1' }],
    ])
    expect(readFileSync(join(k.cwd, 'child.txt'), 'utf8')).toBe('c')
    expect(existsSync('/tmp/keel-perm-child-outside.txt')).toBe(false)
  })
})

describe('crash repair', () => {
  it('a request no one answered before a crash is a denial on resume', async () => {
    const k = await start([])
    const session = k.ctx.sessions.create({ cwd: k.cwd, id: 'crashed' })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('step/start', { turn: 1, step: 1 })
    session.append(
      'assistant/message',
      {
        turn: 1,
        step: 1,
        message: {
          role: 'assistant',
          content: [{ type: 'tool-call', id: 'w1', name: 'write', arguments: '{"path":"a","content":"b"}' }],
        },
      },
      { surfaceOp: { op: 'append' } },
    )
    session.append('tool/call', {
      turn: 1,
      step: 1,
      callId: 'w1',
      name: 'write',
      arguments: '{"path":"a","content":"b"}',
    })
    session.append('permission/request', { callId: 'w1', tool: 'write', summary: 'write a' })
    k.ctx.sessions.close(session)
    const { session: reopened, repairs } = k.ctx.sessions.open('crashed')
    expect(repairs.join('\n')).toMatch(/closed it as interrupted/)
    const tail = reopened.events.slice(-4)
    expect(tail.map((e) => e.type)).toEqual(['permission/decision', 'tool/result', 'step/end', 'turn/end'])
    expect(tail[0]!.data).toEqual({ callId: 'w1', decision: 'deny', scope: 'mode', interrupted: true })
    expect(textOfContent((tail[1] as SessionEvent<'tool/result'>).data.content)).toMatch(
      /declined: the session was interrupted while it waited for an answer/,
    )
  })
})

describe('the asker registry', () => {
  it('an asker is an effect of the plugin that set it: disposing that plugin removes it', async () => {
    const k = await start(
      [
        call('write', { path: 'a.txt', content: 'x' }, 'w1'),
        { text: 'done' },
        call('write', { path: 'b.txt', content: 'y' }, 'w2'),
        { text: 'done' },
      ],
      { mode: 'ask' },
    )
    const fork = k.ctx.plugin({
      name: 'door',
      inject: ['permissions'],
      apply: (ctx: Context) => {
        ctx.permissions.setAsker(async () => ({ decision: 'allow', scope: 'once' }))
      },
    })
    await fork
    const agent = k.agent()
    await agent.prompt('first')
    expect(existsSync(join(k.cwd, 'a.txt'))).toBe(true)
    fork.dispose()
    await agent.prompt('second')
    expect(existsSync(join(k.cwd, 'b.txt'))).toBe(false)
    const last = agent.session.events.findLast((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>
    expect(textOfContent(last.data.content)).toMatch(/there is no one to ask here/)
  })
})

describe('dev invariants', () => {
  it('accept permission events between a call and its result, and refuse one that names no open call', async () => {
    const k = await start([])
    const session = k.ctx.sessions.create({ cwd: k.cwd, persist: false })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('step/start', { turn: 1, step: 1 })
    session.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'write', arguments: '{}' })
    session.append('permission/request', { callId: 'c1', tool: 'write', summary: 'write a' })
    session.append('permission/decision', { callId: 'c1', decision: 'allow', scope: 'once' })
    expect(() => session.append('permission/decision', { callId: 'c9', decision: 'allow', scope: 'once' })).toThrow(
      /names call c9, which has no open tool\/call/,
    )
  })
})
