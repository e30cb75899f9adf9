// Rewind and fork through the real binary: two turns that edit, create and delete files (with `edit` and `bash`),
// then rewinds to each turn's start, a refused conflict, an undo, and the forked conversation with its plan.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { fileTree } from '../../../test-support/files.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-rewind-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
const home = join(scratch, 'home')

function keel(args: string[], cwd: string) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home },
    encoding: 'utf8',
    input: '',
  })
}

function script(name: string, steps: unknown[]): string {
  const path = join(scratch, `${name}.json`)
  writeFileSync(path, JSON.stringify({ steps }))
  return `scripted/${path}`
}

function gitState(dir: string): string {
  return execFileSync('bash', ['-c', 'find .git -type f -print0 | sort -z | xargs -0 sha1sum'], {
    cwd: dir,
    encoding: 'utf8',
  })
}

const edit = (path: string, from: string, to: string) => ({
  name: 'edit',
  arguments: { path, old_string: from, new_string: to },
})
const bash = (command: string) => ({ name: 'bash', arguments: { command } })
const plan = (status: string) => ({
  name: 'todo_write',
  arguments: { todos: [{ content: 'Change the files', status }] },
})

describe('keel sessions rewind and fork', () => {
  // Ten runs of the real binary (from source while the bundle is older than the code): minutes on a loaded machine.
  test('two turns of changes, rewound to each turn, a conflict refused, an undo, and a fork that loads with its plan', () => {
    const cwd = mkdtempSync(join(scratch, 'project-'))
    writeFileSync(join(cwd, 'a.txt'), 'one\n')
    writeFileSync(join(cwd, 'gone.txt'), 'delete me\n')
    writeFileSync(join(cwd, '.gitignore'), 'ignored.log\n')
    writeFileSync(join(cwd, 'ignored.log'), 'not tracked\n')
    execFileSync('bash', ['-c', 'git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init'], {
      cwd,
    })
    const gitBefore = gitState(cwd)
    const start = fileTree(cwd, ['.git'])

    const first = keel(
      [
        '-p',
        'turn one',
        // The bash calls run outside the sandbox: this test is about checkpoints, and must pass without bubblewrap.
        '--yolo',
        '--model',
        script('one', [
          { toolCalls: [plan('in_progress'), edit('a.txt', 'one', 'two')] },
          { toolCalls: [bash('echo new > made.txt && rm gone.txt')] },
          { toolCalls: [plan('completed')] },
          { text: 'Turn one done.' },
        ]),
      ],
      cwd,
    )
    expect(first.status, first.stderr).toBe(0)
    const id = /keel: session (\S+)/.exec(first.stderr)![1]!
    const afterOne = fileTree(cwd, ['.git'])
    expect(afterOne).toMatchObject({ 'a.txt': 'two\n', 'made.txt': 'new\n' })
    expect(afterOne['gone.txt']).toBeUndefined()

    const second = keel(
      [
        '-p',
        'turn two',
        '-r',
        id,
        '--yolo',
        '--model',
        script('two', [
          { toolCalls: [edit('a.txt', 'two', 'three'), bash('echo later > later.txt')] },
          { text: 'Turn two done.' },
        ]),
      ],
      cwd,
    )
    expect(second.status, second.stderr).toBe(0)
    const afterTwo = fileTree(cwd, ['.git'])
    expect(afterTwo).toMatchObject({ 'a.txt': 'three\n', 'later.txt': 'later\n' })

    // The person edits a file the rewind would restore: refused, naming it, and nothing changes.
    writeFileSync(join(cwd, 'a.txt'), 'my own edit\n')
    const refused = keel(['sessions', 'rewind', id, '--to', '2'], cwd)
    expect(refused.status).toBe(1)
    expect(refused.stderr).toContain(
      "these files changed since the agent's last checkpoint or are ignored by git (not the agent's), and would be overwritten or deleted: a.txt (use --force",
    )
    expect(fileTree(cwd, ['.git'])['a.txt']).toBe('my own edit\n')
    writeFileSync(join(cwd, 'a.txt'), 'three\n')

    // Back to the start of turn 2, files and conversation.
    const toTwo = keel(['sessions', 'rewind', id, '--to', '2'], cwd)
    expect(toTwo.status, toTwo.stderr).toBe(0)
    expect(toTwo.stdout).toContain('Files that change (2):\n  restore  a.txt\n  delete   later.txt\n')
    expect(fileTree(cwd, ['.git'])).toEqual(afterOne)
    const fork = /is session (\S+): keel -r/.exec(toTwo.stdout)![1]!

    // Back to the start of turn 1, files only: exactly the starting tree; ignored files and the project's .git untouched.
    const toOne = keel(['sessions', 'rewind', id, '--to', '1', '--files'], cwd)
    expect(toOne.status, toOne.stderr).toBe(0)
    expect(toOne.stdout).toContain('  recreate gone.txt')
    expect(toOne.stdout).not.toContain('is session')
    expect(fileTree(cwd, ['.git'])).toEqual(start)
    expect(gitState(cwd)).toBe(gitBefore)

    // --undo puts back what the last rewind replaced.
    const undo = keel(['sessions', 'rewind', id, '--undo'], cwd)
    expect(undo.status, undo.stderr).toBe(0)
    expect(fileTree(cwd, ['.git'])).toEqual(afterOne)

    // The rewinds are on the original's log; the fork holds turn 1 with its plan and continues on its own.
    const shown = keel(['sessions', 'show', id], cwd)
    expect(shown.stdout).toContain('── files rewound to the start of turn 2: 2 files; conversation forked as')
    expect(shown.stdout).toContain('── files put back (undo of a rewind)')
    const forked = JSON.parse(keel(['sessions', 'show', fork, '--json'], cwd).stdout)
    expect(forked.header.forkedFrom).toMatchObject({ sessionId: id })
    expect(forked.todos).toEqual([{ content: 'Change the files', status: 'completed' }])
    const original = JSON.parse(keel(['sessions', 'show', id, '--json'], cwd).stdout)
    expect(forked.events).toBeLessThan(original.events)
    const listed = keel(['sessions', 'list'], cwd).stdout
    expect(listed).toMatch(new RegExp(`${id}.*\\n  ⑂ ${fork}`))

    const resumed = keel(['-p', 'again', '-r', fork, '--model', script('three', [{ text: 'From the fork.' }])], cwd)
    expect(resumed.status, resumed.stderr).toBe(0)
    const log = readFileSync(join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!, `${fork}.jsonl`), 'utf8')
    const turns = log
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((e) => e.type === 'turn/start')
      .map((e) => e.data.turn)
    expect(turns).toEqual([1, 2])
  }, 180_000)

  test('keel -r <id> --fork continues in a new branch and leaves the original as it was', () => {
    const cwd = mkdtempSync(join(scratch, 'branch-'))
    const first = keel(['-p', 'hello', '--model', script('hello', [{ text: 'Hi.' }])], cwd)
    const id = /keel: session (\S+)/.exec(first.stderr)![1]!
    const before = readFileSync(
      join(
        home,
        'sessions',
        readdirSync(join(home, 'sessions')).find((d) =>
          d.endsWith(relative('/', cwd).replace(/[^A-Za-z0-9._]+/g, '-')),
        )!,
        `${id}.jsonl`,
      ),
      'utf8',
    )
    const branched = keel(['-p', 'more', '-r', id, '--fork', '--model', script('more', [{ text: 'More.' }])], cwd)
    expect(branched.status, branched.stderr).toBe(0)
    const fork = /keel: session (\S+)/.exec(branched.stderr)![1]!
    expect(fork).not.toBe(id)
    const after = readFileSync(
      join(
        home,
        'sessions',
        readdirSync(join(home, 'sessions')).find((d) =>
          d.endsWith(relative('/', cwd).replace(/[^A-Za-z0-9._]+/g, '-')),
        )!,
        `${id}.jsonl`,
      ),
      'utf8',
    )
    expect(after).toBe(before)
    expect(keel(['sessions', 'rewind', id], cwd).stderr).toContain('usage: keel sessions rewind')
    expect(keel(['sessions', 'fork', id, '--at', '7'], cwd).stderr).toContain(
      `session ${id} has no turn 7 (it has 1 turn)`,
    )
  })
})
