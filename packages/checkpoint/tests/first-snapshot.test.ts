// A process's first snapshot of a folder, begun before anything asks for it (`prepare`, what print mode calls as it
// starts) and off the path of the first tool that may write: the turn's rewind point is still the tree as it was
// when the turn began, whatever changed before, and a rewind to it is exact after that tool wrote.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, test } from 'vitest'
import type { Agent } from '@keel/agent'
import { cwdSlug, type SessionEvent } from '@keel/session'
import { prepare } from '../src/directory.ts'
import * as checkpointPlugin from '../src/index.ts'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
let restorePath: (() => void) | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
  restorePath?.()
  restorePath = undefined
})

const config = { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }
const settle = (agent: Agent) => keel!.ctx.parallel('agent/before-close', agent)
const types = (events: readonly SessionEvent[]) =>
  events.map((e) => (e.type === 'tool/call' ? `tool/call ${(e as SessionEvent<'tool/call'>).data.name}` : e.type))

/** A `git` first on PATH that logs each call's command (after running `extra` shell), then runs the real one. */
function gitWrapper(extra = ''): string {
  const bin = mkdtempSync(join(tmpdir(), 'keel-git-first-'))
  const log = join(bin, 'calls')
  writeFileSync(log, '')
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\n${extra}\nexec '${real}' "$@"\n`, { mode: 0o755 })
  const path = process.env.PATH
  process.env.PATH = `${bin}:${path}`
  restorePath = () => {
    process.env.PATH = path
    rmSync(bin, { recursive: true, force: true })
  }
  return log
}
const commands = (log: string) =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace(/-c \S+ /g, '').split(' ')[0])

async function rewindToFirstTurn(agent: Agent): Promise<void> {
  const plan = await keel!.ctx.checkpoints.plan(agent.session.events, keel!.cwd, 1, agent.id)
  await keel!.ctx.checkpoints.apply(plan, keel!.cwd, agent.session)
}

test('begun at the start of the process, it is taken over; a file changed after it began is in the rewind point', async () => {
  const log = gitWrapper()
  keel = await makeKeel({
    steps: [
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo agent > f.txt && echo new > g.txt' } }] },
      { text: 'done' },
    ],
    plugins: [[checkpointPlugin, config]],
  })
  const cwd = keel.cwd
  writeFileSync(join(cwd, 'f.txt'), 'as the process started\n')
  prepare(cwd, config)
  const index = join(keel.home, 'checkpoints', `${cwdSlug(cwd)}.git`, 'index')
  const deadline = Date.now() + 30_000
  while (!existsSync(index) && Date.now() < deadline) await new Promise((done) => setTimeout(done, 10))
  // Read into the shadow's index by then: a change now (the person, another process) is after that capture began.
  writeFileSync(join(cwd, 'f.txt'), 'changed before the turn began\n')
  const agent = keel.agent()
  await agent.prompt('go')
  await settle(agent)
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('agent\n')
  await rewindToFirstTurn(agent)
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('changed before the turn began\n')
  expect(existsSync(join(cwd, 'g.txt'))).toBe(false)
  // The service took over what `prepare` began: the folder was measured once, and no `git init` ran at all (the
  // shadow is written directly), nor a seed (no project index).
  const ran = commands(log)
  expect(ran.filter((command) => command === 'ls-files')).toHaveLength(1)
  expect(ran).not.toContain('init')
})

test('taken over while still under way, the folder is checked once; the rewind point is the tree at the turn start', async () => {
  const log = gitWrapper()
  keel = await makeKeel({
    steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo agent > f.txt' } }] }, { text: 'done' }],
    plugins: [[checkpointPlugin, config]],
  })
  const cwd = keel.cwd
  for (let i = 0; i < 50; i++) writeFileSync(join(cwd, `f${i}.txt`), `${i}\n`)
  writeFileSync(join(cwd, 'f.txt'), 'before\n')
  prepare(cwd, config)
  const agent = keel.agent()
  await agent.prompt('go')
  await settle(agent)
  expect(commands(log).filter((command) => command === 'ls-files')).toHaveLength(1)
  await rewindToFirstTurn(agent)
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('before\n')
})

test('the first tool that may write waits for git to read the tree, not for the commit; the rewind is exact', async () => {
  // A first `commit-tree` (the turn-start snapshot's) that takes a second: its event comes long after the tool ran.
  // The later ones are quick, or each would add its second to the test.
  gitWrapper(
    `case " $* " in *" commit-tree "*) [ "$(grep -c commit-tree "\${0%/git}/calls")" -gt 1 ] || sleep 1;; esac`,
  )
  keel = await makeKeel({
    steps: [
      { toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'x', status: 'in_progress' }] } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo agent > f.txt && rm gone.txt' } }] },
      { text: 'done' },
    ],
    plugins: [[checkpointPlugin, config]],
  })
  const cwd = keel.cwd
  writeFileSync(join(cwd, 'f.txt'), 'before\n')
  writeFileSync(join(cwd, 'gone.txt'), 'deleted by the tool\n')
  const agent = keel.agent()
  await agent.prompt('go')
  await settle(agent)
  const logged = types(agent.session.events)
  expect(logged.indexOf('tool/call bash')).toBeGreaterThan(-1)
  expect(logged.indexOf('tool/call bash')).toBeLessThan(logged.indexOf('checkpoint/snapshot'))
  expect(logged.indexOf('checkpoint/snapshot')).toBeLessThan(logged.indexOf('turn/end'))
  await rewindToFirstTurn(agent)
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('before\n')
  expect(readFileSync(join(cwd, 'gone.txt'), 'utf8')).toBe('deleted by the tool\n')
}, 30_000)

test("a re-check begun as its tool ended holds that step's change, and no later one's", async () => {
  keel = await makeKeel({
    steps: [
      { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.2; echo v1 > f.txt' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo v2 > f.txt' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 0.2; echo v3 > f.txt' } }] },
      { text: 'done' },
    ],
    plugins: [[checkpointPlugin, config]],
  })
  const agent = keel.agent()
  await agent.prompt('go')
  await settle(agent)
  const gitDir = join(keel.home, 'checkpoints', `${cwdSlug(keel.cwd)}.git`)
  const fileIn = (tree: string) => {
    try {
      return execFileSync('git', ['--git-dir', gitDir, 'show', `${tree}:f.txt`], { encoding: 'utf8', stdio: 'pipe' })
    } catch {
      return null
    }
  }
  const taken = agent.session.events
    .filter((e) => e.type === 'checkpoint/snapshot')
    .map((e) => (e as SessionEvent<'checkpoint/snapshot'>).data)
  expect(taken.map((s) => [s.kind, fileIn(s.tree)])).toEqual([
    ['turn-start', null],
    ['change', 'v1\n'],
    ['change', 'v2\n'],
    ['change', 'v3\n'],
  ])
})
