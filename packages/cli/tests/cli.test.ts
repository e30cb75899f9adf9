import { execFileSync, spawnSync } from 'node:child_process'
import {
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { cwdSlug } from '@keel/session'
import { closest } from '@keel/session/text'
import { FLAGS, helpText, parse } from '../src/args.ts'
import { HAS_BWRAP, IN_CI } from '../../../test-support/system-tools.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-cli-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
// The runs' own folder, apart from the homes and scripts in `scratch`: a run snapshots its cwd (checkpoints), and a
// cwd holding every earlier run's home grows with each run.
const work = join(scratch, 'work')
mkdirSync(work)

function keel(
  args: string[],
  options: {
    home?: string
    cwd?: string
    env?: Record<string, string | undefined>
    input?: string
    /** stdin is this file (`keel … < file`) instead of a pipe carrying `input`. */
    stdinFrom?: string
    wrap?: string[]
  } = {},
) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    KEEL_HOME: options.home ?? join(scratch, 'home'),
    ...options.env,
  }
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key]
  const command = [...(options.wrap ?? []), process.execPath, join(root, 'bin/keel.js'), ...args]
  // A generous cap so that a hang (a FIFO read) fails the test instead of stalling the run.
  return spawnSync(command[0]!, command.slice(1), {
    cwd: options.cwd ?? work,
    env: env as NodeJS.ProcessEnv,
    encoding: 'utf8',
    ...(options.stdinFrom === undefined
      ? { input: options.input ?? '' }
      : { stdio: [openSync(options.stdinFrom, 'r'), 'pipe', 'pipe'] }),
    timeout: 120_000,
  })
}

function script(name: string, steps: unknown[]): string {
  const path = join(scratch, `${name}.json`)
  writeFileSync(path, JSON.stringify({ steps }))
  return `scripted/${path}`
}

describe('argument parsing', () => {
  test('an unknown flag is one line with the closest valid one', () => {
    expect(() => parse(['--modle', 'x'])).toThrow('unknown option --modle (did you mean --model?); see keel --help')
    expect(closest('contineu', Object.keys(FLAGS))).toBe('continue')
  })

  test('--help lists every flag and subcommand, one line each', () => {
    const help = helpText('0.0.0')
    for (const name of Object.keys(FLAGS)) expect(help).toContain(`--${name}`)
    for (const sub of ['serve', 'acp', 'sessions list', 'sessions show']) expect(help).toContain(`keel ${sub}`)
  })

  test('bad values are refused with a one-line reason', () => {
    expect(() => parse(['-p', 'x', '--output-format', 'yaml'])).toThrow(
      /--output-format must be text, json or stream-json/,
    )
    expect(() => parse(['-c', '-r', 'abc'])).toThrow(/either --continue or --resume/)
    expect(() => parse(['sessions', 'show'])).toThrow(/usage: keel sessions/)
  })
})

describe('keel -p (print mode)', () => {
  const plan = [
    {
      text: 'Planning.',
      toolCalls: [
        {
          name: 'todo_write',
          arguments: {
            todos: [
              { content: 'Look \u001b[31maround', status: 'in_progress' },
              { content: 'Report', status: 'pending' },
            ],
          },
        },
      ],
    },
    { toolCalls: [{ name: 'bash', arguments: { command: 'echo hello-from-bash' } }] },
    {
      toolCalls: [
        {
          name: 'todo_write',
          arguments: {
            todos: [
              { content: 'Look \u001b[31maround', status: 'completed' },
              { content: 'Report', status: 'completed' },
            ],
          },
        },
      ],
    },
    { text: 'All \u001b]0;pwned\u0007done.' },
  ]

  test('text: the answer on stdout (escaped); interim text, plan updates and tool calls on stderr; a session file on disk', () => {
    const home = join(scratch, 'text-home')
    const result = keel(['-p', 'look around', '--model', script('text', plan)], { home })
    expect(result.status, result.stderr).toBe(0)
    expect(result.stdout).toBe('All ␛]0;pwned␇done.\n')
    expect(result.stderr).toContain('Planning.\n')
    expect(result.stderr).toContain('Plan 0/2 · 1 in progress\n  ◐ Look ␛[31maround\n  ○ Report\n')
    expect(result.stderr).toContain('→ echo hello-from-bash\n')
    expect(result.stderr).toContain('Plan 2/2\n  ✓ Look ␛[31maround\n  ✓ Report\n')
    expect(result.stderr).not.toContain('\u001b')
    // Every task of the plan is done: no word of open tasks.
    expect(result.stderr).not.toContain('open task')
    const dir = join(home, 'sessions')
    const files = readdirSync(join(dir, readdirSync(dir)[0]!)).filter((f) => f.endsWith('.jsonl'))
    expect(files).toHaveLength(1)
    const lines = readFileSync(join(dir, readdirSync(dir)[0]!, files[0]!), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines[0]).toMatchObject({ type: 'session', cwd: work })
    // The re-check after the last `bash`, which the turn's end does not wait for, lands after turn/end.
    expect(lines.filter((l) => l.type !== 'checkpoint/snapshot').at(-1)).toMatchObject({
      type: 'turn/end',
      data: { reason: 'completed' },
    })
  })

  test('stream-json: every log event as a JSON line, live deltas marked as such', () => {
    const result = keel(['-p', 'go', '--model', script('stream', plan), '--output-format', 'stream-json'])
    expect(result.status, result.stderr).toBe(0)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    const events = lines.filter((l) => typeof l.seq === 'number')
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.some((e) => e.type === 'todo/write')).toBe(true)
    expect(lines.filter((l) => l.type === 'live/delta').length).toBeGreaterThan(0)
    expect(result.stderr).not.toContain('Plan')
  })

  test('json: one object with the answer, the reason and the standing plan', () => {
    const result = keel(['-p', 'go', '--model', script('json', plan), '--output-format', 'json'])
    expect(result.status, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({
      reason: 'completed',
      steps: 4,
      toolCalls: 3,
      todos: [{ status: 'completed' }, { status: 'completed' }],
    })
  })

  test('a turn that ends with open tasks says so on stderr, once, escaped', () => {
    const result = keel([
      '-p',
      'go',
      '--model',
      script('open', [
        {
          toolCalls: [
            {
              name: 'todo_write',
              arguments: {
                todos: [
                  { content: 'Done part', status: 'completed' },
                  { content: 'Ask \u001b[2Jthe user', status: 'in_progress' },
                  { content: 'Finish', status: 'pending' },
                ],
              },
            },
          ],
        },
        { text: 'Which database should I use?' },
      ]),
    ])
    expect(result.status, result.stderr).toBe(0)
    expect(result.stdout).toBe('Which database should I use?\n')
    expect(result.stderr).toContain('keel: the turn ended with 2 open tasks: "Ask ␛[2Jthe user", "Finish"\n')
    // A turn whose plan is all done says nothing of it: the text test's run (the same plan) checks that.
  })

  test('the prompt may come on stdin', () => {
    const result = keel(['-p', '--model', script('stdin', [{ text: 'got it' }])], { input: 'from stdin\n' })
    expect(result.stdout).toBe('got it\n')
  })

  test('stdin from a file joins the prompt; stdin from /dev/null adds nothing', () => {
    const notes = join(scratch, 'notes.md')
    writeFileSync(notes, 'the notes ```quoted```\n')
    const steps = [
      { when: 'Summarise\n\n````\nthe notes ```quoted```\n````', text: 'file seen' },
      { when: 'Summarise', text: 'prompt only' },
    ]
    const fromFile = keel(['-p', 'Summarise', '--model', script('file-stdin', steps)], { stdinFrom: notes })
    expect(fromFile.stdout, fromFile.stderr).toBe('file seen\n')
    const fromNull = keel(['-p', 'Summarise', '--model', script('null-stdin', steps)], { stdinFrom: '/dev/null' })
    expect(fromNull.stdout, fromNull.stderr).toBe('prompt only\n')
    const fileAlone = keel(['-p', '--model', script('file-alone', [{ when: 'the notes', text: 'alone' }])], {
      stdinFrom: notes,
    })
    expect(fileAlone.stdout, fileAlone.stderr).toBe('alone\n')
  })

  test('stdin past 10 MB is refused in one line, whether an endless device or a large file', () => {
    const model = script('never', [{ text: 'never asked' }])
    const endless = keel(['-p', 'Summarise', '--model', model], { stdinFrom: '/dev/zero' })
    const large = join(scratch, 'large.log')
    writeFileSync(large, '')
    truncateSync(large, 11 * 1024 * 1024)
    const fromFile = keel(['-p', '--model', model], { stdinFrom: large })
    for (const result of [endless, fromFile]) {
      expect(result.status, result.stderr).toBe(2)
      expect(result.stdout).toBe('')
      expect(result.stderr).toMatch(/^keel: stdin holds more than 10 MB, too much for one prompt; [^\n]*\n$/)
    }
  })

  test('a turn that ends in error exits non-zero with one line', () => {
    const result = keel([
      '-p',
      'go',
      '--model',
      script('error', [{ error: { kind: 'server', message: 'upstream exploded' } }]),
    ])
    expect(result.status).toBe(1)
    expect(result.stderr).toContain('keel: the turn ended with an error: upstream exploded\n')
  })

  test('a missing API key names the variable first, then the choices (see first-hour.test.ts)', () => {
    const result = keel(['-p', 'hi', '--model', 'deepseek/deepseek-v4-flash'], { env: { DEEPSEEK_API_KEY: undefined } })
    expect(result.status).toBe(2)
    expect(result.stderr.split('\n')[0]).toBe(
      'keel: DEEPSEEK_API_KEY is not set (needed for --model deepseek/deepseek-v4-flash)',
    )
  })

  test('an unknown flag and a bad composition are one-line errors', () => {
    const flag = keel(['-p', 'hi', '--modle', 'x'])
    expect(flag.status).toBe(2)
    expect(flag.stderr).toBe('keel: unknown option --modle (did you mean --model?); see keel --help\n')
    const config = join(scratch, 'bad.yml')
    writeFileSync(config, "- id: todo\n  name: '@keel/todo'\n  config:\n    allowParallelInProgress: maybe\n")
    const bad = keel(['-p', 'hi', '--config', config])
    expect(bad.status).toBe(2)
    expect(bad.stderr).toMatch(/^keel: .*bad\.yml: .*allowParallelInProgress expected boolean but got maybe\n$/)
  })
})

describe('keel sessions', () => {
  test('show marks a command that exited non-zero as a failure, with its exit code', () => {
    const home = join(scratch, 'failed-home')
    const cwd = mkdtempSync(join(scratch, 'proj-'))
    const run = keel(
      [
        '-p',
        'build it',
        '--mode',
        'yolo',
        '--model',
        script('failed', [
          { toolCalls: [{ name: 'bash', arguments: { command: 'echo building; exit 3' } }] },
          { text: 'It failed.' },
        ]),
        '--output-format',
        'json',
      ],
      { home, cwd },
    )
    expect(run.status, run.stderr).toBe(0)
    const show = keel(['sessions', 'show', JSON.parse(run.stdout).sessionId], { home, cwd })
    expect(show.stdout).toMatch(/\n {4}✗ exit 3: building \[exit code 3 · /)
  })

  test('list and show, with the standing plan as text, JSON and Markdown', () => {
    const home = join(scratch, 'sessions-home')
    const cwd = mkdtempSync(join(scratch, 'proj-'))
    const run = keel(
      [
        '-p',
        'make a plan',
        '--model',
        script('sessions', [
          {
            toolCalls: [
              {
                name: 'todo_write',
                arguments: {
                  todos: [
                    { content: 'Design', status: 'completed' },
                    { content: 'Build *it*', status: 'in_progress' },
                  ],
                },
              },
            ],
          },
          { text: 'Planned.' },
        ]),
        '--output-format',
        'json',
      ],
      { home, cwd },
    )
    const id = JSON.parse(run.stdout).sessionId
    const list = keel(['sessions', 'list'], { home, cwd })
    // The picker's columns: when, turns, model, cost (none for a free scripted run), the first prompt.
    expect(list.stdout).toMatch(
      new RegExp(`^${id}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d +1 turn  +\\S+\\.json  make a plan\\n$`),
    )
    const json = JSON.parse(keel(['sessions', 'list', '--json'], { home, cwd }).stdout)
    expect(json[0]).toMatchObject({ id, cwd, title: 'make a plan', firstPrompt: 'make a plan', turns: 1 })
    const show = keel(['sessions', 'show', id], { home, cwd })
    expect(show.stdout).toContain('> make a plan')
    expect(show.stdout).toContain('Plan 1/2 · 1 in progress\n  ✓ Design\n  ◐ Build *it*')
    expect(JSON.parse(keel(['sessions', 'show', id, '--json'], { home, cwd }).stdout).todos).toEqual([
      { content: 'Design', status: 'completed' },
      { content: 'Build *it*', status: 'in_progress' },
    ])
    expect(keel(['sessions', 'show', id, '--markdown'], { home, cwd }).stdout).toBe(
      '- [x] Design\n- [ ] Build \\*it\\* _(in progress)_\n',
    )
    const missing = keel(['sessions', 'show', 'no-such-session'], { home, cwd })
    expect(missing.status).toBe(1)
    expect(missing.stderr).toBe('keel: no session with id no-such-session\n')
    expect(keel(['sessions', 'show', '../etc/passwd'], { home, cwd }).stderr).toBe(
      'keel: not a session id: "../etc/passwd"\n',
    )
  })

  test('every stored field is escaped in list, list --all and show; --json stays valid JSON with the same values', () => {
    const home = join(scratch, 'hostile-fields-home')
    const cwd = mkdtempSync(join(scratch, 'proj-'))
    const osc52 = '\u001b]52;c;cm0gLXJmIH4=\u0007'
    const storedCwd = `/srv/evil${osc52}\u202edir\u200b`
    const dir = join(home, 'sessions', cwdSlug(cwd))
    mkdirSync(dir, { recursive: true })
    const append = { surfaceOp: { op: 'append' } }
    const events = [
      { type: 'turn/start', seq: 0, time: 0, data: { turn: 1, trigger: 'prompt' } },
      { type: 'step/start', seq: 1, time: 0, data: { turn: 1, step: 1 } },
      {
        type: 'user/message',
        seq: 2,
        time: 0,
        data: { message: { role: 'user', content: [{ type: 'text', text: `hi\u202e${osc52}` }] } },
        ...append,
      },
      {
        type: 'assistant/message',
        seq: 3,
        time: 0,
        data: {
          turn: 1,
          step: 1,
          message: {
            role: 'assistant',
            content: [{ type: 'tool-call', id: 'c1', name: `x${osc52}`, arguments: '{}' }],
          },
        },
        ...append,
      },
      {
        type: 'tool/call',
        seq: 4,
        time: 0,
        data: { turn: 1, step: 1, callId: 'c1', name: `x${osc52}\u2066`, arguments: `{}${osc52}` },
      },
      {
        type: 'tool/result',
        seq: 5,
        time: 0,
        data: { turn: 1, step: 1, callId: 'c1', isError: true, content: [{ type: 'text', text: `no${osc52}` }] },
        ...append,
      },
      { type: 'step/end', seq: 6, time: 0, data: { turn: 1, step: 1 } },
      { type: 'turn/end', seq: 7, time: 0, data: { turn: 1, reason: `error${osc52}`, message: `bad\u202e` } },
      { type: 'turn/start', seq: 8, time: 0, data: { turn: { evil: 1 }, trigger: 'prompt' } },
      { type: 'user/message', seq: 9, time: 0, data: { message: { role: 'user', content: 42 } }, ...append },
    ]
    const write = (id: string, header: Record<string, unknown>) =>
      writeFileSync(
        join(dir, `${id}.jsonl`),
        [
          JSON.stringify({ type: 'session', version: 1, id, createdAt: 0, ...header }),
          ...events.map((e) => JSON.stringify(e)),
        ].join('\n') + '\n',
      )
    write('parent-1', { cwd: storedCwd })
    write('child-1', { cwd: storedCwd, parent: { sessionId: 'parent-1', callId: `call${osc52}\u202e` } })
    const raw = /[\u001b\u0007\u009b\u202a-\u202e\u2066-\u2069\u200b]/
    const listAll = keel(['sessions', 'list', '--all'], { home, cwd })
    expect(listAll.status).toBe(0)
    expect(listAll.stdout).not.toMatch(raw)
    expect(listAll.stdout).toContain('/srv/evil␛]52;c;cm0gLXJmIH4=␇<U+202E>dir<U+200B>')
    expect(listAll.stdout).toContain('hi<U+202E>␛]52')
    const show = keel(['sessions', 'show', 'child-1'], { home, cwd })
    expect(show.status).toBe(0)
    expect(show.stdout).not.toMatch(raw)
    expect(show.stdout).toContain('  parent   parent-1 (call call␛]52;c;cm0gLXJmIH4=␇<U+202E>)')
    expect(show.stdout).toContain('  → x␛]52;c;cm0gLXJmIH4=␇<U+2066> {}␛]52')
    // The transcript fold reads an unknown reason as an error, and a message of the wrong shape as no text.
    expect(show.stdout).toContain('── turn 1: the turn ended with an error: bad<U+202E>')
    expect(show.stdout).toContain('    ✗ no␛]52;c;cm0gLXJmIH4=␇')
    expect(show.stdout.split('\n').filter((line) => line.startsWith('> '))).toEqual([
      '> hi<U+202E>␛]52;c;cm0gLXJmIH4=␇',
      '> ',
    ])
    for (const args of [
      ['sessions', 'list', '--all', '--json'],
      ['sessions', 'show', 'child-1', '--json'],
    ]) {
      const json = keel(args, { home, cwd })
      expect(json.status).toBe(0)
      expect(json.stdout).not.toMatch(raw)
      const parsed = JSON.parse(json.stdout)
      expect(JSON.stringify(parsed)).toContain(JSON.stringify(storedCwd).slice(1, -1)) // the same values, escaped by JSON
    }
  }, 240_000)

  test('FIFOs, symlinks and folders named like sessions are listed as unreadable with one warning each; list, -c and show never hang', () => {
    const home = join(scratch, 'hostile-files-home')
    const cwd = mkdtempSync(join(scratch, 'proj-'))
    const run = keel(
      ['-p', 'first', '--model', script('hostile-first', [{ text: 'one' }]), '--output-format', 'json'],
      { home, cwd },
    )
    const id = JSON.parse(run.stdout).sessionId
    const dir = join(home, 'sessions', cwdSlug(cwd))
    execFileSync('mkfifo', [join(dir, 'zzz-fifo.jsonl')])
    symlinkSync('/dev/zero', join(dir, 'zzz-zero.jsonl'))
    symlinkSync(join(dir, `${id}.jsonl`), join(dir, 'zzz-alias.jsonl'))
    mkdirSync(join(dir, 'zzz-dir.jsonl'))
    const list = keel(['sessions', 'list'], { home, cwd })
    expect(list.status).toBe(0)
    expect(list.stdout.trim().split('\n').slice(1).sort()).toEqual([
      'zzz-alias  unreadable: is a symbolic link, not a session file',
      'zzz-dir  unreadable: is a directory, not a session file',
      'zzz-fifo  unreadable: is a FIFO, not a session file',
      'zzz-zero  unreadable: is a symbolic link, not a session file',
    ])
    expect(list.stdout).toMatch(new RegExp(`^${id}  `))
    expect(list.stderr.trim().split('\n').sort()).toEqual([
      `keel: warning: ${join(dir, 'zzz-alias.jsonl')}: is a symbolic link, not a session file; skipped`,
      `keel: warning: ${join(dir, 'zzz-dir.jsonl')}: is a directory, not a session file; skipped`,
      `keel: warning: ${join(dir, 'zzz-fifo.jsonl')}: is a FIFO, not a session file; skipped`,
      `keel: warning: ${join(dir, 'zzz-zero.jsonl')}: is a symbolic link, not a session file; skipped`,
    ])
    const resumed = keel(
      ['-c', '-p', 'second', '--model', script('hostile-second', [{ text: 'two' }]), '--output-format', 'json'],
      { home, cwd },
    )
    expect(resumed.status).toBe(0)
    expect(JSON.parse(resumed.stdout).sessionId).toBe(id)
    // Each refusal is one line and exit 1 (hostile.test.ts covers every kind through the store itself).
    for (const [args, name, problem] of [
      [['sessions', 'show', 'zzz-fifo'], 'zzz-fifo', 'is a FIFO'],
      [['sessions', 'show', 'zzz-zero'], 'zzz-zero', 'is a symbolic link'],
      [['-r', 'zzz-alias', '-p', 'x', '--model', script('hostile-none', [])], 'zzz-alias', 'is a symbolic link'],
    ] as const) {
      const result = keel([...args], { home, cwd })
      expect(result.status).toBe(1)
      expect(result.stderr).toBe(`keel: ${join(dir, `${name}.jsonl`)}: ${problem}, not a session file\n`)
    }
  }, 240_000)

  test('a bad header is one line naming the file and the problem, exit 1', () => {
    const home = join(scratch, 'bad-header-home')
    const cwd = mkdtempSync(join(scratch, 'proj-'))
    const dir = join(home, 'sessions', cwdSlug(cwd))
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      join(dir, 'nocwd.jsonl'),
      JSON.stringify({ type: 'session', version: 1, id: 'nocwd', createdAt: 0 }) + '\n',
    )
    writeFileSync(
      join(dir, 'other.jsonl'),
      JSON.stringify({ type: 'session', version: 1, id: 'someone', createdAt: 0, cwd }) + '\n',
    )
    for (const [args, id, problem] of [
      [['sessions', 'show', 'nocwd'], 'nocwd', 'the header has no valid cwd (an absolute path)'],
      [
        ['-r', 'other', '-p', 'x', '--model', script('bad-header', [])],
        'other',
        'the header names session someone, not other as the file name says',
      ],
    ] as const) {
      const result = keel([...args], { home, cwd })
      expect(result.status).toBe(1)
      expect(result.stderr).toBe(`keel: ${join(dir, `${id}.jsonl`)}:1: ${problem}\n`)
    }
    const list = keel(['sessions', 'list'], { home, cwd })
    expect(list.stdout.trim().split('\n').sort()).toEqual([
      'nocwd  unreadable: the header has no valid cwd (an absolute path)',
      'other  unreadable: the header names session someone, not other as the file name says',
    ])
    expect(list.stderr.trim().split('\n')).toHaveLength(2)
  }, 240_000)

  test('a read-only KEEL_HOME names the real cause (EROFS), not ENOENT', ({ skip }) => {
    if (!HAS_BWRAP && IN_CI) throw new Error('bubblewrap (bwrap) is required for this test in CI')
    skip(!HAS_BWRAP, 'bubblewrap (bwrap) is not installed')
    const home = mkdtempSync(join(scratch, 'ro-home-'))
    const wrap = ['bwrap', '--bind', '/', '/', '--ro-bind', home, home, '--dev', '/dev', '--proc', '/proc', '--']
    const result = keel(['-p', 'hi', '--model', script('ro', [{ text: 'never' }])], { home, wrap })
    // The session file is made with the first event, so the turn is what fails: exit 1, naming the real cause.
    expect(result.status).toBe(1)
    expect(result.stderr).toContain(
      `${join(home, 'sessions')}: cannot create this folder: EROFS (read-only file system)\n`,
    )
    expect(result.stderr).not.toContain('ENOENT')
  }, 120_000)

  test('--version and --help', () => {
    expect(keel(['--version']).stdout).toMatch(/^keel \d+\.\d+\.\d+\n$/)
    expect(keel(['--help']).stdout).toContain('Usage:')
  })
})

describe('keel -p against a provider that speaks the real wire format', () => {
  test('a multi-step tool loop through the OpenAI-compatible adapter and a fake server on 127.0.0.1', async () => {
    const { startFakeProvider } = await import('../../../test-support/fake-provider.ts')
    const fake = await startFakeProvider([
      {
        text: 'Let me plan.',
        toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'Count files', status: 'in_progress' }] } }],
      },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo 42' } }] },
      { toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'Count files', status: 'completed' }] } }] },
      { text: 'There are 42.' },
    ])
    try {
      const home = join(scratch, 'fake-home')
      // A folder of its own: the shared scratch holds every earlier test's KEEL_HOME (17,000 files by now), which the
      // checkpoint before each step would copy, turning a 5 s loop into 13 s alone and past the timeout under load.
      const work = join(scratch, 'fake-loop')
      mkdirSync(work)
      const { spawn } = await import('node:child_process')
      const child = spawn(
        process.execPath,
        [
          join(root, 'bin/keel.js'),
          '-p',
          'count the files',
          '--model',
          'openai-compatible/test-model',
          '--base-url',
          `${fake.url}/v1`,
          // The wire format is the point, not the sandbox: the bash call runs without one (no bubblewrap needed).
          '--yolo',
        ],
        // stdin closed, as a CI job has it: an open pipe that never writes costs `-p` its 2 s wait for piped text.
        { cwd: work, env: { ...process.env, KEEL_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] },
      )
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (d) => {
        stdout += d
      })
      child.stderr.on('data', (d) => {
        stderr += d
      })
      const code = await new Promise((done) => child.on('close', done))
      expect(code, stderr).toBe(0)
      // The answer only: interim text is activity, on stderr with the plan.
      expect(stdout).toBe('There are 42.\n')
      expect(stderr).toContain('Let me plan.\n')
      expect(stderr).toContain('Plan 1/1')
      expect(fake.requests).toHaveLength(4)
      const last = fake.requests[3]!.body as {
        model: string
        stream: boolean
        messages: { role: string; content: unknown }[]
        tools: { function: { name: string } }[]
      }
      expect(last.model).toBe('test-model')
      expect(last.stream).toBe(true)
      expect(last.tools.map((t) => t.function.name)).toEqual(expect.arrayContaining(['bash', 'todo_write']))
      expect(last.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
        'Todo list updated: 0 completed, 1 in progress, 0 pending.',
        expect.stringMatching(/^42\n\[exit code 0/),
        'Todo list updated: 1 completed, 0 in progress, 0 pending.',
      ])
    } finally {
      await fake.close()
    }
  })
})
