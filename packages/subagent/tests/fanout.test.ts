import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import type { ScriptStep } from '@keel/llm'
import { readSessionFile, sessionPath, type SessionEvent } from '@keel/session'
import * as subagent from '@keel/subagent'
import type { TodoItem } from '@keel/todo'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const todo = (content: string, status: TodoItem['status']): TodoItem => ({ content, status })

/** One child's script: write a plan, run bash, finish the plan, answer. `bash` may block on a gate file. */
function child(tag: string, command: string, answer: string): ScriptStep[] {
  return [
    {
      when: tag,
      toolCalls: [
        {
          name: 'todo_write',
          arguments: { todos: [todo(`${tag} inspect`, 'in_progress'), todo(`${tag} report`, 'pending')] },
        },
        { name: 'bash', arguments: { command } },
      ],
    },
    {
      when: tag,
      toolCalls: [
        {
          name: 'todo_write',
          arguments: { todos: [todo(`${tag} inspect`, 'completed'), todo(`${tag} report`, 'completed')] },
        },
      ],
    },
    { when: tag, text: answer },
  ]
}

function fanOut(prompts: [string, string][], final = 'PARENT-DONE'): ScriptStep[] {
  return [
    {
      when: 'PARENT',
      toolCalls: prompts.map(([description, prompt]) => ({ name: 'task', arguments: { description, prompt } })),
    },
    { when: 'PARENT', text: final },
  ]
}

function events(path: string): SessionEvent[] {
  return readSessionFile(path).events
}

async function setup(steps: ScriptStep[], config: Partial<subagent.Config> = {}) {
  keel = await makeKeel({ steps, plugins: [[subagent, config]] })
  const parent = keel.agent()
  return { keel, parent }
}

describe('fan-out through the real loop', () => {
  test('two children plan and run bash in their own sessions; the parent gets both answers in model order', async () => {
    const steps = [
      ...fanOut([
        ['Survey A', 'CHILD-A: look at area A'],
        ['Survey B', 'CHILD-B: look at area B'],
      ]),
      ...child('CHILD-A', 'echo from-a > a.txt && cat a.txt', 'Answer from A'),
      ...child('CHILD-B', 'echo from-b > b.txt && cat b.txt', 'Answer from B'),
    ]
    const { keel, parent } = await setup(steps)
    const progress: string[] = []
    keel.ctx.on('agent/delta', (agent, delta) => {
      if (agent === parent && delta.kind === 'tool-output') progress.push(delta.text)
    })
    const result = await parent.prompt('PARENT: survey both areas')
    expect(result.reason).toBe('completed')
    expect(result.text).toBe('PARENT-DONE')
    expect(readFileSync(join(keel.cwd, 'a.txt'), 'utf8')).toBe('from-a\n')
    expect(readFileSync(join(keel.cwd, 'b.txt'), 'utf8')).toBe('from-b\n')

    // The parent's task rows stream what each child is doing.
    expect(progress).toContain('bash: echo from-a > a.txt && cat a.txt\n')
    expect(progress).toContain('bash: echo from-b > b.txt && cat b.txt\n')

    const log = events(sessionPath(keel.cwd, parent.id))
    expect(log.filter((e) => e.type === 'todo/write')).toEqual([])
    const results = log.filter((e) => e.type === 'tool/result')
    expect(results.map((e) => e.type === 'tool/result' && e.data.isError)).toEqual([false, false])
    const texts = results.map((e) => (e.type === 'tool/result' ? textOfContent(e.data.content) : ''))
    expect(texts[0]).toMatch(/^Answer from A\n\n\[subagent [\w-]+ · 3 steps · 3 tool calls\]$/)
    expect(texts[1]).toMatch(/^Answer from B\n\n\[subagent [\w-]+ · 3 steps · 3 tool calls\]$/)

    const starts = log.filter((e) => e.type === 'subagent/start')
    expect(starts.map((e) => e.type === 'subagent/start' && e.data.description)).toEqual(['Survey A', 'Survey B'])
    const childIds = starts.map((e) => (e.type === 'subagent/start' ? e.data.sessionId : ''))
    for (const [i, id] of childIds.entries()) {
      expect(texts[i]).toContain(`[subagent ${id} `)
      const file = readSessionFile(sessionPath(keel.cwd, id))
      const call = log.find(
        (e) => e.type === 'tool/call' && e.data.name === 'task' && e.data.callId === file.header.parent?.callId,
      )
      expect(file.header.parent?.sessionId).toBe(parent.id)
      expect(call).toBeDefined()
      const writes = file.events.filter((e) => e.type === 'todo/write')
      expect(writes).toHaveLength(2)
      const tag = i === 0 ? 'CHILD-A' : 'CHILD-B'
      expect(writes.every((e) => e.type === 'todo/write' && e.data.todos.every((t) => t.content.startsWith(tag)))).toBe(
        true,
      )
      expect(file.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
      // Closed when done: no live agent, no live session, lock released.
      expect(keel.ctx.agents.get(id)).toBeUndefined()
      expect(keel.ctx.sessions.get(id)).toBeUndefined()
      expect(existsSync(sessionPath(keel.cwd, id) + '.lock')).toBe(false)
    }
    // Each subagent event sits between its call and its result.
    for (const start of starts) {
      if (start.type !== 'subagent/start') continue
      const callSeq = log.findIndex((e) => e.type === 'tool/call' && e.data.callId === start.data.callId)
      const endSeq = log.findIndex((e) => e.type === 'subagent/end' && e.data.callId === start.data.callId)
      const resultSeq = log.findIndex((e) => e.type === 'tool/result' && e.data.callId === start.data.callId)
      expect(callSeq).toBeLessThan(start.seq)
      expect(start.seq).toBeLessThan(endSeq)
      expect(endSeq).toBeLessThan(resultSeq)
    }
  })
})

const gated = (tag: string) => `echo ${tag} waiting; until [ -f gate ]; do sleep 0.02; done`
const sleeper = (tag: string) => `sleep 30 & echo $! > ${tag}.pid; wait`

function plansOf(keel: Keel, parent: { session: import('@keel/session').Session }) {
  return Object.values(keel.ctx.subagents.plans(parent.session)).map((p) => ({
    description: p.description,
    status: p.status,
    todos: p.todos,
  }))
}

function pidIn(path: string): number | undefined {
  if (!existsSync(path)) return undefined
  const text = readFileSync(path, 'utf8')
  return /^\d+\n$/.test(text) ? Number(text) : undefined
}

/** Gone, or a zombie nobody has reaped yet (it runs nothing). */
function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
  } catch {
    return true
  }
}

describe('live plans of running children', () => {
  test("subagentPlans shows both children's plans while they run (so they run at once) and their final plans after", async () => {
    const steps = [
      ...fanOut([
        ['Survey A', 'CHILD-A: look at area A'],
        ['Survey B', 'CHILD-B: look at area B'],
      ]),
      ...child('CHILD-A', gated('a'), 'Answer from A'),
      ...child('CHILD-B', gated('b'), 'Answer from B'),
    ]
    const { keel, parent } = await setup(steps)
    const notified: subagent.SubagentPlans[] = []
    keel.ctx.subagents.onChanged((session, key, value) => {
      if (session === parent.session && key === 'subagentPlans') notified.push(value)
    })
    const turn = parent.prompt('PARENT: survey both areas')
    await waitFor(() => plansOf(keel, parent).filter((p) => p.todos).length === 2, 'both live plans')
    const running = [
      {
        description: 'Survey A',
        status: 'running',
        todos: [todo('CHILD-A inspect', 'in_progress'), todo('CHILD-A report', 'pending')],
      },
      {
        description: 'Survey B',
        status: 'running',
        todos: [todo('CHILD-B inspect', 'in_progress'), todo('CHILD-B report', 'pending')],
      },
    ]
    expect(plansOf(keel, parent)).toEqual(running)
    expect(keel.ctx.subagents.running).toBe(2)
    // The pure fold over the parent's log knows the children but not their live plans: those live in the children's logs.
    const folded = keel.ctx.projections.get(parent.session, 'subagentPlans')!
    expect(Object.values(folded).map((p) => [p.status, p.todos])).toEqual([
      ['running', null],
      ['running', null],
    ])
    expect(notified.some((value) => Object.values(value).filter((p) => p.todos).length === 2)).toBe(true)

    writeFileSync(join(keel.cwd, 'gate'), '')
    expect((await turn).reason).toBe('completed')
    const done = [
      {
        description: 'Survey A',
        status: 'completed',
        todos: [todo('CHILD-A inspect', 'completed'), todo('CHILD-A report', 'completed')],
      },
      {
        description: 'Survey B',
        status: 'completed',
        todos: [todo('CHILD-B inspect', 'completed'), todo('CHILD-B report', 'completed')],
      },
    ]
    expect(plansOf(keel, parent)).toEqual(done)
    // Once nothing runs, the overlay adds nothing: the projection is the whole answer.
    expect(keel.ctx.subagents.plans(parent.session)).toBe(keel.ctx.projections.get(parent.session, 'subagentPlans'))
    expect(Object.values(notified.at(-1)!).map((p) => p.status)).toEqual(['completed', 'completed'])
  })
})

describe('cancellation', () => {
  test("cancelling the parent during the fan-out kills both children's commands within 1 s and ends every child aborted", async () => {
    const steps = [
      ...fanOut([
        ['Sleep A', 'CHILD-A: wait'],
        ['Sleep B', 'CHILD-B: wait'],
      ]),
      ...child('CHILD-A', sleeper('a'), 'never'),
      ...child('CHILD-B', sleeper('b'), 'never'),
    ]
    const { keel, parent } = await setup(steps)
    const turn = parent.prompt('PARENT: wait twice')
    const pidA = join(keel.cwd, 'a.pid')
    const pidB = join(keel.cwd, 'b.pid')
    await waitFor(() => pidIn(pidA) && pidIn(pidB), 'both sleeps started')
    const pids = [pidIn(pidA)!, pidIn(pidB)!]
    expect(pids.every((pid) => !processGone(pid))).toBe(true)
    parent.cancel()
    await waitFor(() => pids.every(processGone), 'both sleeps killed', 1000)
    const result = await turn
    expect(result.reason).toBe('aborted')

    const log = events(sessionPath(keel.cwd, parent.id))
    const ends = log.filter((e) => e.type === 'subagent/end')
    expect(ends.map((e) => e.type === 'subagent/end' && e.data.reason)).toEqual(['aborted', 'aborted'])
    const results = log.filter((e) => e.type === 'tool/result')
    expect(results.map((e) => e.type === 'tool/result' && e.data.isError)).toEqual([true, true])
    for (const e of results)
      if (e.type === 'tool/result')
        expect(textOfContent(e.data.content)).toMatch(
          /^Error: the subagent was cancelled before it finished\.\n\[subagent /,
        )
    for (const e of ends) {
      if (e.type !== 'subagent/end') continue
      const file = readSessionFile(sessionPath(keel.cwd, e.data.sessionId))
      expect(file.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
      expect(keel.ctx.sessions.get(e.data.sessionId)).toBeUndefined()
    }
    expect(keel.ctx.subagents.running).toBe(0)
    expect(plansOf(keel, parent).map((p) => p.status)).toEqual(['aborted', 'aborted'])
  })

  test('a task queued behind the cap never starts when the turn is cancelled', async () => {
    const steps = [
      ...fanOut([
        ['Sleep A', 'CHILD-A: wait'],
        ['Sleep B', 'CHILD-B: wait'],
      ]),
      ...child('CHILD-A', sleeper('a'), 'never'),
      ...child('CHILD-B', sleeper('b'), 'never'),
    ]
    const { keel, parent } = await setup(steps, { maxConcurrent: 1 })
    const turn = parent.prompt('PARENT: wait twice')
    await waitFor(() => pidIn(join(keel.cwd, 'a.pid')), 'first sleep started')
    expect(parent.session.events.filter((e) => e.type === 'subagent/start')).toHaveLength(1)
    parent.cancel()
    expect((await turn).reason).toBe('aborted')
    const results = parent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => (e.type === 'tool/result' ? textOfContent(e.data.content) : ''))
    expect(results[0]).toMatch(/^Error: the subagent was cancelled/)
    expect(results[1]).toBe('Error: the task was cancelled before its subagent started.')
    expect(parent.session.events.filter((e) => e.type === 'subagent/start')).toHaveLength(1)
    expect(existsSync(join(keel.cwd, 'b.pid'))).toBe(false)
  })
})

describe('concurrency cap', () => {
  test('maxConcurrent 1 runs the second child only after the first ends', async () => {
    const steps = [
      ...fanOut([
        ['Survey A', 'CHILD-A: look at area A'],
        ['Survey B', 'CHILD-B: look at area B'],
      ]),
      ...child('CHILD-A', gated('a'), 'Answer from A'),
      ...child('CHILD-B', 'echo b', 'Answer from B'),
    ]
    const { keel, parent } = await setup(steps, { maxConcurrent: 1 })
    const turn = parent.prompt('PARENT: survey both areas')
    await waitFor(() => plansOf(keel, parent)[0]?.todos, 'first child plan')
    await new Promise((done) => setTimeout(done, 100))
    expect(plansOf(keel, parent).map((p) => p.description)).toEqual(['Survey A'])
    expect(keel.ctx.subagents.running).toBe(1)
    writeFileSync(join(keel.cwd, 'gate'), '')
    expect((await turn).reason).toBe('completed')
    const results = parent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => (e.type === 'tool/result' ? textOfContent(e.data.content) : ''))
    expect(results.map((text) => text.split('\n')[0])).toEqual(['Answer from A', 'Answer from B'])
  })
})

describe('errors and depth', () => {
  test('a child that errors becomes an isError result and the parent carries on', async () => {
    const steps = [
      ...fanOut([
        ['Works', 'CHILD-OK: answer'],
        ['Breaks', 'CHILD-ERR: fail'],
      ]),
      { when: 'CHILD-OK', text: 'fine' },
      { when: 'CHILD-ERR', error: { kind: 'bad-request' as const, message: 'model exploded' } },
    ]
    const { keel, parent } = await setup(steps)
    const result = await parent.prompt('PARENT: try both')
    expect(result).toMatchObject({ reason: 'completed', text: 'PARENT-DONE' })
    const results = parent.session.events.filter((e) => e.type === 'tool/result')
    expect(results.map((e) => e.type === 'tool/result' && e.data.isError)).toEqual([false, true])
    const errorText = results[1]!.type === 'tool/result' ? textOfContent(results[1]!.data.content) : ''
    expect(errorText).toMatch(
      /^Error: the subagent failed: model exploded\n\[subagent [\w-]+ · 1 step · 0 tool calls\]$/,
    )
    // The parent's next request carried the error, so its model saw it.
    const last = keel.model.requests.at(-1)!
    expect(JSON.stringify(last.messages)).toContain('the subagent failed: model exploded')
    expect(plansOf(keel, parent).map((p) => p.status)).toEqual(['completed', 'error'])
    const end = parent.session.events.find((e) => e.type === 'subagent/end' && e.data.reason === 'error')
    expect(end).toMatchObject({ data: { message: 'model exploded', todos: null } })
  })

  test('with the default maxDepth 1 a child is not offered task; an agent at that depth is refused', async () => {
    const steps = [
      ...fanOut([['Look', 'CHILD-A: look']]),
      { when: 'CHILD-A', text: 'looked' },
      { when: 'DEEP', toolCalls: [{ name: 'task', arguments: { description: 'Nest', prompt: 'CHILD-Z: nest' } }] },
      { when: 'DEEP', text: 'gave up' },
    ]
    const { keel, parent } = await setup(steps)
    await parent.prompt('PARENT: look')
    const toolsFor = (tag: string) =>
      keel.model.requests
        .filter((r) => JSON.stringify(r.messages[0]).includes(tag))
        .map((r) => r.tools.map((t) => t.name).sort())
    expect(toolsFor('PARENT')[0]).toEqual(['bash', 'job_kill', 'job_output', 'propose_plan', 'task', 'todo_write'])
    expect(toolsFor('CHILD-A')).toEqual([['bash', 'job_kill', 'job_output', 'propose_plan', 'todo_write']])
    // Even if an agent at the limit is offered task, the tool refuses it.
    const deep = keel.agent({ depth: 1 })
    await deep.prompt('DEEP: try to nest')
    const refused = deep.session.events.find((e) => e.type === 'tool/result')
    expect(refused).toMatchObject({ data: { isError: true } })
    expect(refused?.type === 'tool/result' && textOfContent(refused.data.content)).toBe(
      'Error: subagents may nest at most 1 level deep; do this task yourself',
    )
    expect(keel.ctx.sessions.list().filter((s) => s.parent?.sessionId === deep.id)).toEqual([])
  })

  test('maxDepth 2: a child may delegate once more, the grandchild may not; excluded tools are inherited', async () => {
    const steps = [
      ...fanOut([['Delegate', 'CHILD-X: delegate further']]),
      {
        when: 'CHILD-X',
        toolCalls: [{ name: 'task', arguments: { description: 'Deeper', prompt: 'GRAND-Y: answer' } }],
      },
      { when: 'GRAND-Y', text: 'grand answer' },
      { when: 'CHILD-X', text: 'child answer' },
    ]
    const { keel } = await setup(steps, { maxDepth: 2 })
    const lead = keel.agent({ excludeTools: ['bash'] })
    const result = await lead.prompt('PARENT: delegate')
    expect(result.reason).toBe('completed')
    const toolsFor = (tag: string) =>
      keel.model.requests
        .filter((r) => JSON.stringify(r.messages[0]).includes(tag))
        .map((r) => r.tools.map((t) => t.name).sort())
    expect(toolsFor('CHILD-X')[0]).toEqual(['propose_plan', 'task', 'todo_write'])
    expect(toolsFor('GRAND-Y')).toEqual([['propose_plan', 'todo_write']])
    const sessions = keel.ctx.sessions.list()
    const childSummary = sessions.find((s) => s.parent?.sessionId === lead.id)!
    const grand = sessions.find((s) => s.parent?.sessionId === childSummary.id)!
    expect(grand.title).toBe('GRAND-Y: answer')
    const childLog = events(childSummary.path)
    expect(childLog.find((e) => e.type === 'tool/result')?.type === 'tool/result').toBe(true)
    expect(JSON.stringify(childLog)).toContain('grand answer')
    expect(
      textOfContent(
        (lead.session.events.find((e) => e.type === 'tool/result') as SessionEvent<'tool/result'>).data.content,
      ),
    ).toMatch(/^child answer\n/)
  })
})
