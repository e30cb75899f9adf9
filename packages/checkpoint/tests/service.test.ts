// Snapshots through the real agent loop: one at each turn start, one after a step that may have changed files
// (only when the tree changed), none after read-only steps; limits turn checkpoints off with one warning.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Type } from 'typebox'
import { afterEach, describe, expect, test } from 'vitest'
import type { Agent } from '@keel/agent'
import { cwdSlug, type SessionEvent } from '@keel/session'
import { withGitFirstOnPath } from './git-on-path.ts'
import * as checkpointPlugin from '../src/index.ts'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const config = { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }
const snapshots = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'checkpoint/snapshot').map((e) => (e as SessionEvent<'checkpoint/snapshot'>).data)
/** Lets the last re-check, which the turn's end does not wait for, land (what closing the agent does). */
const settle = (agent: Agent) => keel!.ctx.parallel('agent/before-close', agent)

/** A `git` first on PATH that logs every call (and runs `extra` shell first), then runs the real one. */
function gitWrapper(extra = ''): { bin: string; log: string; restore(): void } {
  const bin = mkdtempSync(join(tmpdir(), 'keel-git-log-'))
  const log = join(bin, 'calls')
  writeFileSync(log, '')
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\n${extra}\nexec '${real}' "$@"\n`, { mode: 0o755 })
  const path = process.env.PATH
  process.env.PATH = `${bin}:${path}`
  return {
    bin,
    log,
    restore() {
      process.env.PATH = path
      rmSync(bin, { recursive: true, force: true })
    },
  }
}
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean)

describe('checkpoint snapshots', () => {
  test('a turn start, then only steps whose tools may change files and did; read-only steps cost nothing', async () => {
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo one > one.txt' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'cat one.txt' } }] },
        { toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'x', status: 'in_progress' }] } }] },
        { text: 'done' },
        { text: 'second turn' },
      ],
      plugins: [[checkpointPlugin, config]],
    })
    writeFileSync(join(keel.cwd, 'start.txt'), 'start\n')
    const agent = keel.agent()
    await agent.prompt('go')
    await settle(agent)
    const first = snapshots(agent.session.events)
    // Turn start; after `echo >`: changed; after `cat`: same tree, nothing recorded; after todo_write: not looked at.
    expect(first.map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [1, 'change'],
    ])
    expect(first[0]!.tree).not.toBe(first[1]!.tree)
    await agent.prompt('again')
    const all = snapshots(agent.session.events)
    expect(all.map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [1, 'change'],
      [2, 'turn-start'],
    ])
    expect(all[2]!.tree).toBe(all[1]!.tree)
    // Snapshots are off the model surface.
    expect(JSON.stringify(agent.session.deriveMessages())).not.toContain('checkpoint')
  })

  test('the snapshot runs beside the request, but a tool that changes files waits for it: it records the state before', async () => {
    // The scripted model answers at once, long before the snapshot's git processes are done, so without the wait
    // the tool below would run first. It records whether this turn's snapshot was on the log when it started.
    keel = await makeKeel({
      steps: [
        { toolCalls: [{ name: 'read', arguments: {} }] },
        { toolCalls: [{ name: 'touch', arguments: {} }] },
        { text: 'done' },
      ],
      plugins: [[checkpointPlugin, config]],
    })
    const cwd = keel.cwd
    writeFileSync(join(cwd, 'f.txt'), 'before\n')
    keel.ctx.tools.register({
      name: 'read',
      description: 'reads nothing (a read-only tool, which need not wait)',
      parameters: Type.Object({}),
      execute: () => 'ok',
    })
    keel.ctx.tools.register({
      name: 'touch',
      description: 'changes f.txt',
      parameters: Type.Object({}),
      execute: () => {
        writeFileSync(join(cwd, 'f.txt'), 'after\n')
        return 'changed'
      },
    })
    const agent = keel.agent()
    await agent.prompt('go')
    await settle(agent)
    const taken = snapshots(agent.session.events)
    expect(taken.map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [1, 'change'],
    ])
    // Rewinding to the turn's start brings back the file as it was before the tool ran.
    const plan = await keel.ctx.checkpoints.plan(agent.session.events, cwd, 1, agent.id)
    await keel.ctx.checkpoints.apply(plan, cwd, agent.session)
    expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('before\n')
  })

  test('a step after which nothing could have written starts no git process', async () => {
    const git = gitWrapper()
    try {
      const run = [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo 1 >> a.txt' } }] }]
      const unchanged = { toolCalls: [{ name: 'bash', arguments: { command: 'cat a.txt' } }] }
      const todo = {
        toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'x', status: 'in_progress' }] } }],
      }
      const read = { toolCalls: [{ name: 'read', arguments: { path: 'a.txt' } }] }
      keel = await makeKeel({
        steps: [
          { text: 'the warm-up is behind us' },
          ...run,
          unchanged,
          { text: 'two bash calls' },
          ...run,
          read,
          todo,
          read,
          todo,
          unchanged,
          { text: 'the same, and four read-only steps' },
        ],
        plugins: [[checkpointPlugin, config]],
      })
      const agent = keel.agent()
      const gitsOf = async (prompt: string) => {
        const before = lines(git.log).length
        await agent.prompt(prompt)
        await settle(agent)
        return lines(git.log).slice(before)
      }
      // What git was asked to do (a commit's message names its turn), in any order: a re-check begins as its tool
      // ends, beside the commit of the snapshot before it. Not `write-tree`, which follows an `add` only when the
      // index changed: whether it did depends on the second files were written in (git's racy clean rule makes the
      // next `add` read such a file again and write the index).
      const commands = (calls: string[]) =>
        calls
          .map((line) => line.replace(/-c \S+ /g, '').split(' ')[0]!)
          .filter((command) => command !== 'write-tree')
          .sort()
      await gitsOf('first')
      const plain = await gitsOf('second')
      const withReads = await gitsOf('third')
      // Turn start, the change after `echo`, the re-check after `cat` (unchanged: no event); none for the reads.
      expect(commands(plain).filter((command) => command === 'add')).toHaveLength(3)
      expect(commands(withReads)).toEqual(commands(plain))
      expect(snapshots(agent.session.events).map((s) => [s.turn, s.kind])).toEqual([
        [1, 'turn-start'],
        [2, 'turn-start'],
        [2, 'change'],
        [3, 'turn-start'],
        [3, 'change'],
      ])
    } finally {
      git.restore()
    }
  })

  test('the first snapshot starts when the session opens, before any prompt: the first tool call finds it done', async () => {
    keel = await makeKeel({ steps: [{ text: 'never asked' }], plugins: [[checkpointPlugin, config]] })
    for (let i = 0; i < 200; i++) writeFileSync(join(keel.cwd, `f${i}.txt`), `${i}\n`)
    const index = join(keel.home, 'checkpoints', `${cwdSlug(keel.cwd)}.git`, 'index')
    keel.agent()
    // No prompt: the warm-up alone fills the shadow's index with every file.
    const deadline = Date.now() + 30_000
    while (!existsSync(index) && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20))
    const listed = execFileSync('git', ['ls-files'], {
      env: {
        ...process.env,
        GIT_DIR: join(keel.home, 'checkpoints', `${cwdSlug(keel.cwd)}.git`),
        GIT_INDEX_FILE: index,
      },
      encoding: 'utf8',
    })
    expect(listed.split('\n').filter(Boolean)).toHaveLength(200)
  })

  test('a tool held back by a slow snapshot is said, and so is its end', async () => {
    // A git whose first `add` takes 1.5 s: what a folder of 30,000 files costs the first snapshot on a slow disk (the
    // later ones read only what changed).
    const bin = mkdtempSync(join(tmpdir(), 'keel-git-slow-'))
    const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
    const first = join(bin, 'first-add-done')
    writeFileSync(
      join(bin, 'git'),
      `#!/bin/sh\ncase " $* " in *" add "*) [ -e '${first}' ] || { sleep 1.5; : > '${first}'; };; esac\nexec '${real}' "$@"\n`,
      { mode: 0o755 },
    )
    const path = process.env.PATH
    process.env.PATH = `${bin}:${path}`
    try {
      keel = await makeKeel({
        steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo x > x.txt' } }] }, { text: 'done' }],
        plugins: [[checkpointPlugin, config]],
      })
      writeFileSync(join(keel.cwd, 'a.txt'), 'a\n')
      const notices: string[] = []
      keel.ctx.on('keel/notice', (notice) => {
        if (notice.source === 'checkpoint') notices.push(notice.text)
      })
      const agent = keel.agent()
      await agent.prompt('go')
      await settle(agent)
      expect(notices[0]).toMatch(
        new RegExp(`^taking a checkpoint of ${keel.cwd} \\(\\d+ files?\\) before the tool runs`),
      )
      expect(notices[1]).toMatch(/^checkpoint taken; the tool runs now \(waited \d+\.\d s\)$/)
      expect(snapshots(agent.session.events).map((s) => s.kind)).toEqual(['turn-start', 'change'])
    } finally {
      process.env.PATH = path
      rmSync(bin, { recursive: true, force: true })
    }
  }, 60_000)

  test('a turn that ends before its snapshot is done still has it, inside the turn', async () => {
    keel = await makeKeel({ steps: [{ text: 'at once' }], plugins: [[checkpointPlugin, config]] })
    writeFileSync(join(keel.cwd, 'f.txt'), 'x\n')
    const agent = keel.agent()
    await agent.prompt('go')
    const types = agent.session.events.map((e) => e.type)
    expect(types.indexOf('checkpoint/snapshot')).toBeGreaterThan(types.indexOf('turn/start'))
    expect(types.indexOf('checkpoint/snapshot')).toBeLessThan(types.indexOf('turn/end'))
  })

  test('a shadow index.lock a killed git left behind is recovered; one a live process holds is not taken', async () => {
    keel = await makeKeel({
      steps: [{ text: 'one' }, { text: 'two' }, { text: 'three' }],
      plugins: [[checkpointPlugin, config]],
    })
    const agent = keel.agent()
    await agent.prompt('go')
    const lock = join(keel.home, 'checkpoints', `${cwdSlug(keel.cwd)}.git`, 'index.lock')
    // What a kill -9 during `git add` leaves: the lock file, and no process holding it.
    writeFileSync(lock, '')
    writeFileSync(join(keel.cwd, 'after-crash.txt'), 'x\n')
    await agent.prompt('again')
    expect(snapshots(agent.session.events).map((s) => [s.turn, s.kind])).toEqual([
      [1, 'turn-start'],
      [2, 'turn-start'],
    ])
    expect(existsSync(lock)).toBe(false)
    // A live holder (another git at work) keeps its lock: this snapshot gives up instead.
    const holder = spawn('bash', ['-c', `exec 3>>'${lock}'; exec sleep 30`], { stdio: 'ignore' })
    try {
      while (!existsSync(lock)) await new Promise((done) => setTimeout(done, 10))
      writeFileSync(join(keel.cwd, 'while-held.txt'), 'x\n')
      await agent.prompt('third')
      expect(existsSync(lock)).toBe(true)
      expect(snapshots(agent.session.events)).toHaveLength(2)
    } finally {
      holder.kill()
    }
  }, 60_000)

  test('a directory over the file limit gets one warning and no snapshots; rewind then says why', async () => {
    keel = await makeKeel({
      steps: [{ text: 'a' }, { text: 'b' }],
      plugins: [[checkpointPlugin, { ...config, maxFiles: 2 }]],
    })
    for (const name of ['a', 'b', 'c']) writeFileSync(join(keel.cwd, name), name)
    const warnings: string[] = []
    keel.ctx.on('keel/notice', (notice) => {
      if (notice.source === 'checkpoint') warnings.push(notice.text)
    })
    const agent = keel.agent()
    await agent.prompt('one')
    await agent.prompt('two')
    expect(snapshots(agent.session.events)).toEqual([])
    expect(warnings).toEqual([
      `checkpoints are off for ${keel.cwd}: it holds 3 files (the limit is 2); files cannot be rewound there`,
    ])
    await expect(keel.ctx.checkpoints.plan(agent.session.events, keel.cwd, 1, agent.id)).rejects.toThrow(
      /has no file checkpoints \(checkpoints were off/,
    )
  })

  test('a folder git cannot list in time is too large: the check does not wait out the whole walk', async () => {
    // A home or /tmp with no .gitignore: git walked millions of files for two minutes before printing. Here a `git`
    // first on PATH lists a few, then hangs as such a walk would (60 s); the check gives up after `listSeconds`.
    await withGitFirstOnPath(
      () => `*" ls-files "*" --others "*)
  i=0; while [ $i -lt 10 ]; do printf 'f%s\\0' $i; i=$((i+1)); done; exec sleep 60;;`,
      async () => {
        keel = await makeKeel({
          steps: [{ text: 'a' }],
          plugins: [[checkpointPlugin, { ...config, listSeconds: 1 }]],
        })
        const warnings: string[] = []
        keel.ctx.on('keel/notice', (notice) => {
          if (notice.source === 'checkpoint') warnings.push(notice.text)
        })
        await keel.agent().prompt('one')
        expect(warnings).toEqual([
          `checkpoints are off for ${keel.cwd}: it holds more files than git lists in 1 s; files cannot be rewound there`,
        ])
      },
    )
  }, 40_000)

  test('a rewind is recorded between turns, which the dev invariants accept for checkpoint events only', async () => {
    keel = await makeKeel({
      steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo v1 > f.txt' } }] }, { text: 'ok' }],
      plugins: [[checkpointPlugin, config]],
    })
    const agent = keel.agent()
    await agent.prompt('make f')
    const plan = await keel.ctx.checkpoints.plan(agent.session.events, keel.cwd, 1, agent.id)
    expect(plan.changes).toEqual([{ status: 'D', path: 'f.txt' }])
    await keel.ctx.checkpoints.apply(plan, keel.cwd, agent.session)
    expect(agent.session.events.at(-1)).toMatchObject({
      type: 'checkpoint/restore',
      data: { toTurn: 1, files: ['f.txt'] },
    })
    // A re-check the turn's end did not wait for lands between turns too; another plugin's event may not.
    expect(() => agent.session.append('job/start', { id: 'j1', command: 'true', sandbox: 'workspace' })).toThrow(
      /a non-core event outside an open turn/,
    )
  })
})
