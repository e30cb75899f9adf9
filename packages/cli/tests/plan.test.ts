// Plan mode and `keel plan` end to end: the real binary, the scripted model, the session log read back from disk.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-plan-cli-'))
const home = join(scratch, 'home')
const work = join(scratch, 'work')
mkdirSync(work, { recursive: true })
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const env = () => {
  const merged: Record<string, string | undefined> = { ...process.env, KEEL_HOME: home, KEEL_MODE: undefined }
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key]
  return merged as NodeJS.ProcessEnv
}
function keel(args: string[]) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: work,
    env: env(),
    encoding: 'utf8',
    input: '',
  })
}
function script(steps: unknown[]): string {
  const path = join(scratch, `script-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, JSON.stringify({ steps }))
  return `scripted/${path}`
}
type Event = { type: string; seq: number; data: Record<string, any> }
function lastLog(): { id: string; events: Event[] } {
  const dir = join(home, 'sessions')
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((f) => f.isFile() && f.name.endsWith('.jsonl'))
    .map((f) => join(f.parentPath, f.name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
  const [header, ...lines] = readFileSync(files[0]!, 'utf8').trim().split('\n')
  return { id: JSON.parse(header!).id, events: lines.map((line) => JSON.parse(line)) }
}
const text = (event: Event) => (event.data.message.content as { text?: string }[]).map((b) => b.text ?? '').join('')
const planNotes = (events: Event[]) =>
  events.filter((e) => e.type === 'user/message' && e.data.message.source === 'plan').map(text)

const CHECKLIST = [
  { content: 'Write a.txt', status: 'pending' },
  { content: 'Check it', status: 'pending' },
]
const propose = (id: string, plan: string) => ({
  toolCalls: [{ name: 'propose_plan', id, arguments: { plan, todos: CHECKLIST } }],
})
const write = (id: string) => ({ toolCalls: [{ name: 'write', id, arguments: { path: 'a.txt', content: 'x\n' } }] })

describe('plan mode through the CLI', () => {
  test('refuse, propose, reject with a sentence, propose again, edit, approve and run; sessions show renders it', () => {
    // 1. Plan mode: the write is refused by the policy, the file untouched; the proposal is on the log.
    const first = keel([
      '-p',
      'add a.txt',
      '--mode',
      'plan',
      '--model',
      script([write('w1'), propose('p1', 'Write a.txt with x'), { text: 'Proposed.' }]),
    ])
    expect(first.stderr).toContain('declined: denied by plan mode')
    expect(first.status).toBe(0)
    expect(existsSync(join(work, 'a.txt'))).toBe(false)
    let { id, events } = lastLog()
    expect(events.find((e) => e.type === 'permission/decision')!.data).toEqual({
      callId: 'w1',
      decision: 'deny',
      scope: 'mode',
      mode: 'plan',
    })
    expect(events.find((e) => e.type === 'plan/proposal')!.data).toEqual({
      callId: 'p1',
      plan: 'Write a.txt with x',
      todos: CHECKLIST,
    })
    expect(keel(['plan']).stdout).toContain('plan proposed: approve, edit or reject it')

    // 2. A rejection runs a turn, still in plan mode, whose request carries the sentence.
    const rejected = keel([
      'plan',
      'reject',
      'call',
      'it',
      'b.txt',
      '--model',
      script([write('w2'), propose('p2', 'Write b.txt'), { text: 'Proposed again.' }]),
    ])
    expect(rejected.stderr).toBe('')
    expect(rejected.status).toBe(0)
    ;({ events } = lastLog())
    const rejectAt = events.findIndex((e) => e.type === 'plan/reject')
    expect(events[rejectAt]!.data).toEqual({ callId: 'p1', message: 'call it b.txt' })
    expect(planNotes(events.slice(rejectAt))[0]).toContain('The person rejected your plan and said: "call it b.txt"')
    expect(events.filter((e) => e.type === 'permission/decision').map((e) => e.data.mode)).toEqual(['plan', 'plan'])

    // 3. Approval in auto mode: the checklist becomes the standing plan and the turn writes the file.
    const approved = keel([
      'plan',
      'approve',
      '--mode',
      'auto',
      '--model',
      script([write('w3'), { text: 'Wrote it.' }]),
    ])
    expect(approved.stderr).toBe('')
    expect(approved.stdout).toContain('Wrote it.')
    expect(readFileSync(join(work, 'a.txt'), 'utf8')).toBe('x\n')
    ;({ events } = lastLog())
    const approveAt = events.findIndex((e) => e.type === 'plan/approve')
    expect(events.slice(approveAt, approveAt + 4).map((e) => e.type)).toEqual([
      'plan/approve',
      'todo/write',
      'permission/mode',
      'turn/start',
    ])
    expect(events[approveAt + 1]!.data).toEqual({ todos: CHECKLIST, source: 'user' })
    expect(events.find((e) => e.type === 'permission/decision' && e.data.callId === 'w3')!.data).toMatchObject({
      decision: 'allow',
      mode: 'auto',
    })

    // 4. The person's edits from the shell; one that breaks a rule is refused with it named, and nothing lands.
    expect(keel(['plan', 'add', 'Write', 'docs']).status).toBe(0)
    expect(keel(['plan', 'move', '3', '1']).status).toBe(0)
    const shown = keel(['plan', 'done', '2'])
    expect(shown.stdout).toContain('1. ○ Write docs\n  2. ✓ Write a.txt\n  3. ○ Check it')
    const before = lastLog().events.length
    const refused = keel(['plan', 'add', 'Check it'])
    expect(refused.status).toBe(1)
    expect(refused.stderr).toContain('the plan was not changed: todos[3] repeats todos[2] ("Check it")')
    expect(lastLog().events.length).toBe(before)
    expect(keel(['plan', 'remove', '9']).stderr).toContain('there is no item 9 (the plan has 3)')

    // 5. `sessions show` renders the proposals, the answers and the person's edits.
    const show = keel(['sessions', 'show', id]).stdout
    expect(show).toContain('◇ plan rejected: “call it b.txt”')
    expect(show).toContain('◇ plan approved, running in auto mode')
    expect(show).toContain('✎ you changed the plan: added "Write docs"')
    expect(show).toContain('✎ you changed the plan: reordered the items')
    expect(show).toContain('✎ you changed the plan: marked done "Write a.txt"')
  })

  test('keel plan reaches a session another keel holds; the edit lands in its running turn', async () => {
    const running = spawn(
      process.execPath,
      [join(root, 'bin/keel.js'), '-p', 'wait', '--timeout', '20s', '--model', script([{ hang: true }])],
      { cwd: work, env: env(), stdio: ['ignore', 'pipe', 'pipe'] },
    )
    const ended = new Promise<number | null>((done) => running.on('exit', done))
    try {
      const run = join(home, 'run')
      const deadline = Date.now() + 20_000
      while (!(existsSync(run) && readdirSync(run).some((name) => name.endsWith('.sock')))) {
        if (Date.now() > deadline) throw new Error('the running keel never listened for plan edits')
        await new Promise((done) => setTimeout(done, 50))
      }
      const added = keel(['plan', 'add', 'From the shell'])
      expect(added.stderr).toBe('')
      expect(added.stdout).toContain('○ From the shell')
    } finally {
      running.kill('SIGINT')
      await ended
    }
    const { events } = lastLog()
    const edit = events.findIndex((e) => e.type === 'todo/write' && e.data.source === 'user')
    expect(events[edit]!.data.todos).toEqual([{ content: 'From the shell', status: 'pending' }])
    // Written by the holder, inside its open turn.
    expect(events.findIndex((e) => e.type === 'turn/start')).toBeLessThan(edit)
  })
})
