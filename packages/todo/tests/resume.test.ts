import { spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { standingPlanFromFile } from '@keel/todo'
import { makeKeel } from '../../../test-support/harness.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-resume-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function keel(args: string[], home: string, cwd: string) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home },
    encoding: 'utf8',
  })
}

describe('resume and replay across processes', () => {
  test('a plan written by one process is the standing plan when another reopens the session; a new turn clears it', async () => {
    const home = join(scratch, 'home')
    const cwd = mkdtempSync(join(scratch, 'cwd-'))
    const script = join(scratch, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          {
            toolCalls: [
              {
                name: 'todo_write',
                arguments: {
                  todos: [
                    { content: 'Write tests', status: 'completed' },
                    { content: 'Ship it', status: 'in_progress' },
                  ],
                },
              },
            ],
          },
          { text: 'Planned.' },
        ],
      }),
    )
    const script2 = join(scratch, 'script2.json')
    writeFileSync(script2, JSON.stringify({ steps: [{ text: 'Second turn, no plan.' }] }))
    const first = keel(['-p', 'plan the work', '--model', `scripted/${script}`, '--output-format', 'json'], home, cwd)
    expect(first.status, first.stderr).toBe(0)
    const { sessionId, todos } = JSON.parse(first.stdout)
    expect(todos).toEqual([
      { content: 'Write tests', status: 'completed' },
      { content: 'Ship it', status: 'in_progress' },
    ])

    // Another process (this one) reopens the file: the standing plan is rebuilt from the log alone.
    const k = await makeKeel()
    process.env.KEEL_HOME = home
    try {
      const { agent } = k.ctx.agents.resume(sessionId, { model: k.model })
      expect(k.ctx.projections.get(agent.session, 'todos')).toEqual(todos)
      const path = k.ctx.sessions.pathOf(sessionId)!
      expect(standingPlanFromFile(path).todos).toEqual(todos)
      k.ctx.agents.close(agent)
    } finally {
      await k.dispose()
    }
    const show = keel(['sessions', 'show', sessionId, '--json'], home, cwd)
    expect(JSON.parse(show.stdout).todos).toEqual(todos)

    // A second turn in a third process (--continue) starts with no plan standing.
    const second = keel(
      ['-p', 'something else', '-c', '--model', `scripted/${script2}`, '--output-format', 'json'],
      home,
      cwd,
    )
    expect(second.status, second.stderr).toBe(0)
    expect(JSON.parse(second.stdout)).toMatchObject({ sessionId, turn: 2, todos: [] })
    expect(JSON.parse(keel(['sessions', 'show', sessionId, '--json'], home, cwd).stdout).todos).toBeNull()
  })

  test('standingPlanFromFile answers from the tail of a 1,000,000-event log', () => {
    const path = join(scratch, 'big.jsonl')
    const fd = openSync(path, 'w')
    writeSync(fd, JSON.stringify({ type: 'session', version: 1, id: 'big', createdAt: 0, cwd: '/' }) + '\n')
    const plan = [{ content: 'the plan', status: 'in_progress' }]
    let seq = 0
    const lines: string[] = []
    const flush = () => {
      writeSync(fd, lines.join(''))
      lines.length = 0
    }
    lines.push(JSON.stringify({ type: 'turn/start', seq: seq++, time: 0, data: { turn: 1, trigger: 'prompt' } }) + '\n')
    lines.push(JSON.stringify({ type: 'todo/write', seq: seq++, time: 0, data: { todos: plan } }) + '\n')
    while (seq < 1_000_000) {
      lines.push(`{"type":"step/start","seq":${seq++},"time":0,"data":{"turn":1,"step":${seq}}}\n`)
      if (lines.length >= 10_000) flush()
    }
    flush()
    // The most recent write sits near the end, under a few thousand later events.
    writeSync(
      fd,
      JSON.stringify({
        type: 'todo/write',
        seq: seq++,
        time: 0,
        data: { todos: [{ content: 'latest', status: 'pending' }] },
      }) + '\n',
    )
    for (let i = 0; i < 1000; i++)
      writeSync(fd, `{"type":"step/end","seq":${seq++},"time":0,"data":{"turn":1,"step":1}}\n`)
    closeSync(fd)
    const found = standingPlanFromFile(path)
    expect(found.todos).toEqual([{ content: 'latest', status: 'pending' }])
    expect(found.bytesRead).toBeLessThan(200 * 1024)
  })
})
