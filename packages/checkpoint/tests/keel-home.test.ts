// Keel's home inside the working directory (`keel` run in `~` with its home there): no snapshot holds its session
// logs or its shadows, whatever the .gitignore files say or the project's index tracks, and a rewind leaves them be.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sessionPath } from '@keel/session'
import { afterEach, expect, test } from 'vitest'
import * as checkpointPlugin from '../src/index.ts'
import { performRewind, previewRewind } from '../src/index.ts'
import { Shadow } from '../src/shadow.ts'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
let root: string | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
  if (root) rmSync(root, { recursive: true, force: true })
  root = undefined
})

const limits = { maxFiles: 50_000, maxBytes: 500_000_000 }
const git = (cwd: string, args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' })
const paths = (gitDir: string, tree: string) =>
  execFileSync('git', ['--git-dir', gitDir, 'ls-tree', '-r', '--name-only', tree], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)

test('a session whose KEEL_HOME is inside its cwd: snapshots hold nothing of it; a rewind leaves it as it is', async () => {
  keel = await makeKeel({
    steps: [
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo two > f.txt && echo agent > keel-home/mine.txt' } }] },
      { text: 'changed' },
    ],
    plugins: [[checkpointPlugin, { enabled: true, ...limits }]],
  })
  const cwd = keel.cwd
  const home = join(cwd, 'keel-home')
  mkdirSync(home)
  process.env.KEEL_HOME = home
  writeFileSync(join(cwd, 'f.txt'), 'one\n')
  writeFileSync(join(home, 'mine.txt'), 'mine\n')
  // A .gitignore that would take the home back in: the pathspec of every snapshot excludes it all the same.
  writeFileSync(join(cwd, '.gitignore'), '!keel-home/\n!sessions/\n')
  const agent = keel.agent()
  await agent.prompt('change f')
  await keel.ctx.parallel('agent/before-close', agent)
  const log = sessionPath(cwd, agent.id)
  expect(log.startsWith(home)).toBe(true)
  const gitDir = new Shadow(cwd, home).gitDir
  expect(existsSync(gitDir)).toBe(true)
  const snapshots = agent.session.events.filter((e) => e.type === 'checkpoint/snapshot')
  expect(snapshots.length).toBe(2)
  for (const snapshot of snapshots) {
    const held = paths(gitDir, (snapshot.data as { tree: string }).tree)
    expect(held).toContain('f.txt')
    expect(held.filter((path) => path.startsWith('keel-home'))).toEqual([])
  }

  const logBefore = readFileSync(log, 'utf8')
  const source = { id: agent.id, cwd, events: agent.session.events }
  const preview = await previewRewind(keel.ctx.checkpoints, source, { kind: 'turn', toTurn: 1, scope: 'files' })
  expect(preview.plan?.changes.map((change) => change.path)).toEqual(['f.txt'])
  await performRewind({ checkpoints: keel.ctx.checkpoints, sessions: keel.ctx.sessions }, preview, {
    session: agent.session,
  })
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('one\n')
  expect(readFileSync(join(home, 'mine.txt'), 'utf8')).toBe('agent\n')
  expect(readFileSync(log, 'utf8').startsWith(logBefore)).toBe(true)
  expect(existsSync(join(gitDir, 'HEAD'))).toBe(true)
})

test('a home the project index tracks, or an old shadow holds, is dropped; a rewind to an old tree skips it', async () => {
  root = mkdtempSync(join(tmpdir(), 'keel-home-'))
  const cwd = join(root, 'project')
  const home = join(cwd, 'keel-home')
  mkdirSync(join(home, 'sessions'), { recursive: true })
  writeFileSync(join(cwd, 'f.txt'), 'one\n')
  writeFileSync(join(home, 'sessions', 'log.jsonl'), '{"seq":0}\n')
  // Tracked and not ignored: only the shadow's own rule keeps it out of the seed.
  writeFileSync(join(cwd, '.gitignore'), '!keel-home/\n!sessions/\n')
  git(cwd, ['init', '-q'])
  git(cwd, ['add', '-A'])
  git(cwd, ['commit', '-qm', 'init'])

  expect(git(cwd, ['ls-files'])).toContain('keel-home/sessions/log.jsonl')
  const shadow = new Shadow(cwd, home)
  await shadow.init()
  expect(await shadow.seed(limits)).toBeDefined()
  const seeded = await shadow.tree()
  expect(paths(shadow.gitDir, seeded)).toEqual(['.gitignore', 'f.txt'])

  // A shadow from before the rule: its index and an old snapshot hold the home.
  const env = {
    ...process.env,
    GIT_DIR: shadow.gitDir,
    GIT_WORK_TREE: cwd,
    GIT_INDEX_FILE: join(shadow.gitDir, 'index'),
  }
  execFileSync('git', ['add', '-f', 'keel-home'], { cwd, env })
  const oldTree = execFileSync('git', ['write-tree'], { cwd, env, encoding: 'utf8' }).trim()
  expect(paths(shadow.gitDir, oldTree)).toContain('keel-home/sessions/log.jsonl')
  await new Shadow(cwd, home).init()
  expect(paths(shadow.gitDir, await shadow.tree())).toEqual(['.gitignore', 'f.txt'])

  writeFileSync(join(home, 'sessions', 'log.jsonl'), '{"seq":0}\n{"seq":1}\n')
  writeFileSync(join(cwd, 'f.txt'), 'two\n')
  const current = await shadow.tree('index.restore')
  await shadow.restore(current, oldTree, 'index.restore')
  expect(readFileSync(join(cwd, 'f.txt'), 'utf8')).toBe('one\n')
  expect(readFileSync(join(home, 'sessions', 'log.jsonl'), 'utf8')).toBe('{"seq":0}\n{"seq":1}\n')
  expect(await shadow.diff(current, oldTree)).toEqual([{ status: 'M', path: 'f.txt' }])
})
