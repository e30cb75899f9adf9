// The first hour of a new user, through the real `keel` binary: project instructions in the request the provider
// receives, settings files and `keel config`, the first run without a key, and the CLI paths that used to lose input.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test, vi } from 'vitest'
import { startFakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'
import { run } from '../../../test-support/run.ts'
import { parse } from '../src/args.ts'
import { DEFAULT_COMPOSITION } from '../src/composition.ts'
import { fail } from '../src/failure.ts'
import { resolveSettings } from '../src/settings.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-first-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
// Several real keel processes per test, on a machine the suite shares. A test's runs that do not depend on each
// other start together.
vi.setConfig({ testTimeout: 120_000 })

let folders = 0
/** A project: `<dir>/repo` with `.git`, a nested `pkg/app` folder, and a KEEL_HOME beside it. */
function project() {
  const dir = join(scratch, `p${++folders}`)
  const repo = join(dir, 'repo')
  const app = join(repo, 'pkg', 'app')
  mkdirSync(join(repo, '.git'), { recursive: true })
  mkdirSync(app, { recursive: true })
  mkdirSync(join(dir, 'home'))
  return { dir, repo, app, home: join(dir, 'home') }
}

type Options = {
  home: string
  cwd: string
  env?: Record<string, string | undefined>
  input?: string
  holdStdin?: boolean
}

function clean(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value
  return out
}

function keel(args: string[], options: Options) {
  const env = clean({ ...process.env, KEEL_MODEL: undefined, KEEL_HOME: options.home, ...options.env })
  return run(process.execPath, [join(root, 'bin/keel.js'), ...args], { cwd: options.cwd, env, input: options.input })
}

/**
 * What main() prints and returns when `body` throws, run here with KEEL_HOME set to `home`: its failure goes through
 * fail(), as main()'s does. stdout stays empty unless `body` writes there.
 */
async function inProcess(home: string, body: () => Promise<void>) {
  const previous = process.env.KEEL_HOME
  process.env.KEEL_HOME = home
  let stderr = ''
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk)
    return true
  })
  try {
    await body()
    return { status: 0, stdout: '', stderr }
  } catch (error) {
    return { status: fail(error), stdout: '', stderr }
  } finally {
    write.mockRestore()
    if (previous === undefined) delete process.env.KEEL_HOME
    else process.env.KEEL_HOME = previous
  }
}

/** Runs keel against a fake OpenAI-compatible provider (asynchronously: the provider lives in this process). */
async function keelWithProvider(replies: FakeReply[], args: string[], options: Options) {
  const fake = await startFakeProvider(replies)
  try {
    const env = clean({ ...process.env, KEEL_MODEL: undefined, KEEL_HOME: options.home, ...options.env })
    const child = spawn(
      process.execPath,
      [join(root, 'bin/keel.js'), '--model', 'openai-compatible/test', '--base-url', `${fake.url}/v1`, ...args],
      { cwd: options.cwd, env },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => {
      stdout += d
    })
    child.stderr.on('data', (d) => {
      stderr += d
    })
    // holdStdin: a parent that keeps the pipe open and never writes.
    if (!options.holdStdin) child.stdin.end(options.input ?? '')
    const status = await new Promise<number | null>((done) => child.on('close', done))
    return {
      status,
      stdout,
      stderr,
      requests: fake.requests.map((r) => r.body as { messages: { role: string; content: string }[] }),
    }
  } finally {
    await fake.close()
  }
}

const systemOf = (body: { messages: { role: string; content: string }[] }) =>
  body.messages.find((m) => m.role === 'system')!.content
const userOf = (body: { messages: { role: string; content: unknown }[] }) =>
  body.messages.find((m) => m.role === 'user')!.content

describe('project instructions', () => {
  test("AGENTS.md from the root down to the cwd (CLAUDE.md where there is none), the user's first, in every request byte for byte", async () => {
    const p = project()
    writeFileSync(join(p.home, 'AGENTS.md'), 'USER-RULE: answer in English.\n')
    writeFileSync(join(p.repo, 'AGENTS.md'), 'ROOT-RULE: run npm test.\n')
    writeFileSync(join(p.repo, 'CLAUDE.md'), 'ROOT-CLAUDE: must not load, AGENTS.md wins.\n')
    writeFileSync(join(p.repo, 'pkg', 'CLAUDE.md'), 'PKG-RULE: from CLAUDE.md.\n')
    writeFileSync(join(p.app, 'AGENTS.md'), 'APP-RULE: closest.\n')
    writeFileSync(join(p.dir, 'AGENTS.md'), 'OUTSIDE: above the repository root.\n')
    const run = await keelWithProvider(
      [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] }, { text: 'done' }],
      ['-p', 'go', '--output-format', 'json'],
      { home: p.home, cwd: p.app },
    )
    expect(run.status, run.stderr).toBe(0)
    expect(run.requests).toHaveLength(2)
    const system = systemOf(run.requests[0]!)
    expect(systemOf(run.requests[1]!)).toBe(system)
    const order = ['USER-RULE', 'ROOT-RULE', 'PKG-RULE', 'APP-RULE'].map((marker) => system.indexOf(marker))
    expect(order.every((at) => at > 0)).toBe(true)
    expect([...order].sort((a, b) => a - b)).toEqual(order)
    expect(system).not.toContain('ROOT-CLAUDE')
    expect(system).not.toContain('OUTSIDE')
    expect(system).toContain(`## ${join(p.home, 'AGENTS.md')}\n\nUSER-RULE`)
    expect(system).toContain('## ../../AGENTS.md\n\nROOT-RULE')
    expect(system).toContain('## ../CLAUDE.md\n\nPKG-RULE')
    expect(system).toContain('## AGENTS.md\n\nAPP-RULE')
    expect(JSON.parse(run.stdout).instructions).toEqual([
      join(p.home, 'AGENTS.md'),
      join(p.repo, 'AGENTS.md'),
      join(p.repo, 'pkg', 'CLAUDE.md'),
      join(p.app, 'AGENTS.md'),
    ])
  })

  test("without a .git above, only the cwd's own file; the total is capped at 32 KiB with a note of what was cut", async () => {
    const p = project()
    rmSync(join(p.repo, '.git'), { recursive: true })
    writeFileSync(join(p.repo, 'AGENTS.md'), 'PARENT: not a project root any more.\n')
    writeFileSync(join(p.app, 'AGENTS.md'), `HEAD-OF-FILE\n${'x'.repeat(40 * 1024)}\nTAIL-OF-FILE\n`)
    const run = await keelWithProvider([{ text: 'ok' }], ['-p', 'go'], { home: p.home, cwd: p.app })
    expect(run.status, run.stderr).toBe(0)
    const system = systemOf(run.requests[0]!)
    expect(system).not.toContain('PARENT')
    expect(system).toContain('HEAD-OF-FILE')
    expect(system).not.toContain('TAIL-OF-FILE')
    expect(system).toMatch(/\[Instructions were capped at 32 KiB: cut \d+ of \d+ bytes of AGENTS\.md\.\]/)
  })

  test("a subagent's system prompt carries the same instructions as its parent's", async () => {
    const p = project()
    writeFileSync(join(p.repo, 'AGENTS.md'), 'SHARED-RULE: both agents see this.\n')
    const run = await keelWithProvider(
      [
        { toolCalls: [{ name: 'task', arguments: { description: 'look', prompt: 'Look around.' } }] },
        { text: 'child done' },
        { text: 'parent done' },
      ],
      ['-p', 'delegate'],
      { home: p.home, cwd: p.repo },
    )
    expect(run.status, run.stderr).toBe(0)
    expect(run.requests).toHaveLength(3)
    const child = run.requests[1]!
    expect(userOf(child)).toContain('Look around.')
    expect(systemOf(child)).toContain('## AGENTS.md\n\nSHARED-RULE')
    expect(systemOf(run.requests[0]!)).toContain('## AGENTS.md\n\nSHARED-RULE')
  })
})

describe('settings files', () => {
  test('project over user, environment over project, flags over environment; keel config says where each came from', async () => {
    const p = project()
    writeFileSync(
      join(p.home, 'settings.json'),
      JSON.stringify({ model: 'scripted/user', todo: { allowParallelInProgress: true }, compaction: { keepTurns: 5 } }),
    )
    mkdirSync(join(p.repo, '.keel'))
    writeFileSync(
      join(p.repo, '.keel', 'settings.json'),
      JSON.stringify({ model: 'scripted/project', compaction: { keepTurns: 3 } }),
    )
    mkdirSync(join(p.app, '.keel'))
    writeFileSync(join(p.app, '.keel', 'settings.json'), JSON.stringify({ compaction: { threshold: 0.5 } }))
    // The personal file beside it ("always" writes there) counts over the shared one of its folder.
    writeFileSync(join(p.repo, '.keel', 'settings.local.json'), JSON.stringify({ compaction: { keepTurns: 4 } }))
    // The person's own repository: trusted, so its project files apply in full (untrusted, they only narrow).
    expect((await keel(['trust'], { home: p.home, cwd: p.app })).status).toBe(0)
    const json = async (env: Record<string, string> = {}, args: string[] = []) => {
      const run = await keel(['config', '--json', ...args], { home: p.home, cwd: p.app, env })
      expect(run.status, run.stderr).toBe(0)
      return JSON.parse(run.stdout)
    }
    const [merged, fromEnv, fromFlag, text] = await Promise.all([
      json(),
      json({ KEEL_MODEL: 'scripted/env' }),
      json({ KEEL_MODEL: 'scripted/env' }, ['--model', 'scripted/flag']),
      keel(['config'], { home: p.home, cwd: p.app }),
    ])
    expect(merged.files).toEqual([
      { path: join(p.home, 'settings.json'), scope: 'user' },
      { path: join(p.repo, '.keel', 'settings.json'), scope: 'project' },
      { path: join(p.repo, '.keel', 'settings.local.json'), scope: 'project' },
      { path: join(p.app, '.keel', 'settings.json'), scope: 'project' },
    ])
    expect(merged.settings.model).toBe('scripted/project')
    expect(merged.settings.compaction).toMatchObject({ keepTurns: 4, threshold: 0.5, auto: true })
    expect(merged.settings.todo).toEqual({ allowParallelInProgress: true })
    expect(merged.sources).toMatchObject({
      model: join(p.repo, '.keel', 'settings.json'),
      'compaction.keepTurns': join(p.repo, '.keel', 'settings.local.json'),
      'compaction.threshold': join(p.app, '.keel', 'settings.json'),
      'todo.allowParallelInProgress': join(p.home, 'settings.json'),
    })
    expect(merged.sources['compaction.auto']).toMatch(/^default/)
    expect(fromEnv.sources.model).toBe('env KEEL_MODEL')
    expect(fromFlag.settings.model).toBe('scripted/flag')
    expect(text.stdout).toMatch(
      new RegExp(`compaction\\.threshold +0\\.5 +${join(p.app, '.keel', 'settings.json').replace(/[.]/g, '\\.')}\\n`),
    )
  })

  test('settings reach the plugins and the model: a project that allows parallel tasks and names its model', async () => {
    const p = project()
    const script = join(p.dir, 'script.json')
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
                    { content: 'A', status: 'in_progress' },
                    { content: 'B', status: 'in_progress' },
                  ],
                },
              },
            ],
          },
          { text: 'ok' },
        ],
      }),
    )
    // Each settings file in a project of its own, both runs at once.
    const run = (settings: object) => {
      const q = project()
      mkdirSync(join(q.repo, '.keel'))
      writeFileSync(join(q.repo, '.keel', 'settings.json'), JSON.stringify(settings))
      return keel(['-p', 'go', '--output-format', 'json', '--trust'], { home: q.home, cwd: q.app })
    }
    const [strict, parallel] = await Promise.all([
      run({ model: `scripted/${script}` }),
      run({ model: `scripted/${script}`, todo: { allowParallelInProgress: true } }),
    ])
    expect(strict.status, strict.stderr).toBe(0)
    expect(JSON.parse(strict.stdout)).toMatchObject({ model: `scripted/${script}`, todos: [] })
    expect(JSON.parse(parallel.stdout).todos).toEqual([
      { content: 'A', status: 'in_progress' },
      { content: 'B', status: 'in_progress' },
    ])
    expect(readFileSync(join(root, 'packages/cli/keel.yml'), 'utf8')).toContain('allowParallelInProgress: false')
  })

  test('a bad value, an unknown key, broken JSON and a credential are one line naming the file, exit 2', async () => {
    const p = project()
    const file = join(p.home, 'settings.json')
    // Each case in a KEEL_HOME of its own. The first through the binary, in print mode and `keel config` (every
    // command validates the same way); the rest where main() checks them, resolveSettings, and reported by the
    // fail() that main() ends with: the same stderr and exit code, without a process each.
    const checks: Promise<void>[] = []
    let serial = Promise.resolve()
    const check = (content: string, expected: RegExp) => {
      const q = project()
      const file = join(q.home, 'settings.json')
      writeFileSync(file, content)
      const expectOneLine = (run: { status: number | null; stdout: string; stderr: string }) => {
        expect(run.status, run.stderr).toBe(2)
        expect(run.stdout).toBe('')
        expect(run.stderr.split('\n').filter(Boolean)).toHaveLength(1)
        expect(run.stderr).toMatch(expected)
        expect(run.stderr).toContain(`keel: ${file}: `)
      }
      if (checks.length === 0) {
        for (const args of [['config'], ['-p', 'hi', '--model', 'scripted/none']])
          checks.push(keel(args, { home: q.home, cwd: q.app }).then(expectOneLine))
        return
      }
      // One at a time: each sets KEEL_HOME and catches stderr for its own run.
      serial = serial.then(() =>
        inProcess(q.home, async () => {
          await resolveSettings(parse(['config']).flags, q.app, DEFAULT_COMPOSITION)
        }).then(expectOneLine),
      )
      checks.push(serial)
    }
    check(
      '{"todo":{"allowParallelInProgress":"maybe"}}',
      /todo\.allowParallelInProgress expected boolean but got maybe/,
    )
    check('{"compaction":{"threshold":"high"}}', /compaction\.threshold expected number/)
    check('{"mode":"sometimes"}', /mode expected .*"ask"/)
    check('{"permissions":{"allow":"bash"}}', /permissions\.allow expected array/)
    check(
      '{"baseURL":"http://localhost:11434/v1"}',
      /unknown setting "baseURL" \(did you mean baseUrl\?\); known: model, baseUrl, mode, permissions, /,
    )
    check(
      '{"todo":{"allowParallel":true}}',
      /unknown setting todo\.allowParallel \(did you mean todo\.allowParallelInProgress\?\)/,
    )
    check('{"model":"deepseek"}', /model expected .*<provider>\/<model>/)
    check('{"model": ', /not valid JSON/)
    check('[1]', /expected a JSON object/)
    check('{"apiKey":"sk-123"}', /refusing apiKey: API keys and tokens stay in the environment/)
    check(
      '{"mcpServers":{"gh":{"command":"gh-mcp","env":{"GITHUB_TOKEN":"x"}}}}',
      /refusing mcpServers\.gh\.env\.GITHUB_TOKEN/,
    )
    check('{"mcpServers":{"gh":{"args":["x"]}}}', /mcpServers/)
    writeFileSync(
      file,
      JSON.stringify({
        mode: 'ask',
        permissions: { allow: ['bash(npm test:*)'] },
        sandbox: { allowedDomains: ['registry.npmjs.org'] },
        mcpServers: { fs: { command: 'mcp-fs', args: ['.'] } },
      }),
    )
    const [ok] = await Promise.all([keel(['config', '--json'], { home: p.home, cwd: p.app }), ...checks])
    expect(ok.status, ok.stderr).toBe(0)
    expect(JSON.parse(ok.stdout).settings).toMatchObject({
      mode: 'ask',
      permissions: { allow: ['bash(npm test:*)'] },
      mcpServers: { fs: { command: 'mcp-fs' } },
    })
  })
})

describe('first run', () => {
  test('without a key: the variable the provider needs, the providers, the keyless demo; exit 2', async () => {
    const p = project()
    const [run, anthropic] = await Promise.all([
      keel(['-p', 'hi'], { home: p.home, cwd: p.app, env: { DEEPSEEK_API_KEY: undefined } }),
      keel(['-p', 'hi', '--model', 'anthropic/claude-sonnet-4-5'], {
        home: p.home,
        cwd: p.app,
        env: { ANTHROPIC_API_KEY: undefined, ANTHROPIC_AUTH_TOKEN: undefined },
      }),
    ])
    expect(run.status).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toMatch(
      /^keel: DEEPSEEK_API_KEY is not set \(needed for --model deepseek\/deepseek-v4-flash\)\n/,
    )
    for (const provider of ['deepseek', 'openai', 'anthropic', 'openrouter', 'openai-compatible'])
      expect(run.stderr).toContain(`keel:   ${provider} `)
    expect(run.stderr).toContain('keel: To try Keel without a key: keel --model scripted/demo\n')
    expect(anthropic.status).toBe(2)
    expect(anthropic.stderr).toMatch(/^keel: ANTHROPIC_API_KEY is not set/)
  })
})

describe('CLI paths that used to lose input or pick wrong', () => {
  test('piped text joins the prompt in a fenced block; piped text alone is the prompt', async () => {
    const p = project()
    // Three runs at once, each with its own fake provider; the held pipe is given up only after its wait.
    const [both, alone, held] = await Promise.all([
      keelWithProvider([{ text: 'ok' }], ['-p', 'summarise this'], {
        home: p.home,
        cwd: p.app,
        input: 'line one\n```\ncode\n```\n',
      }),
      keelWithProvider([{ text: 'ok' }], ['-p'], { home: p.home, cwd: p.app, input: 'just the pipe\n' }),
      keelWithProvider([{ text: 'ok' }], ['-p', 'no pipe text'], { home: p.home, cwd: p.app, holdStdin: true }),
    ])
    expect(both.status, both.stderr).toBe(0)
    expect(userOf(both.requests[0]!)).toBe('summarise this\n\n````\nline one\n```\ncode\n```\n````')
    expect(userOf(alone.requests[0]!)).toBe('just the pipe')
    expect(held.status, held.stderr).toBe(0)
    expect(userOf(held.requests[0]!)).toBe('no pipe text')
  })

  test('--cwd that does not exist or is a file: one line, exit 2, nothing run', async () => {
    const p = project()
    const file = join(p.dir, 'a-file')
    writeFileSync(file, '')
    const runs: Promise<void>[] = []
    for (const [cwd, reason] of [
      [join(p.dir, 'missing'), 'no such directory'],
      [file, 'not a directory'],
    ] as const) {
      for (const args of cwd === file
        ? [['-p', 'hi', '--model', 'scripted/demo']]
        : [
            ['-p', 'hi', '--model', 'scripted/demo'],
            ['sessions', 'list'],
          ])
        runs.push(
          keel([...args, '--cwd', cwd], { home: p.home, cwd: p.app }).then((run) => {
            expect(run.status).toBe(2)
            expect(run.stderr).toBe(`keel: --cwd ${cwd}: ${reason}\n`)
          }),
        )
    }
    await Promise.all(runs)
    expect(readdirSync(p.home)).toEqual([])
  })

  test('json output: usage, duration, model, instruction files, and todos [] when no plan stands (errors too)', async () => {
    const p = project()
    const script = join(p.dir, 'usage.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          { toolCalls: [{ name: 'bash', arguments: { command: 'true' } }], usage: { input: 100, output: 7 } },
          { text: 'done', usage: { input: 130, output: 5 } },
        ],
      }),
    )
    const failing = join(p.dir, 'fail.json')
    writeFileSync(failing, JSON.stringify({ steps: [{ error: { kind: 'server', message: 'boom' } }] }))
    const [run, failed] = await Promise.all([
      keel(['-p', 'go', '--model', `scripted/${script}`, '--output-format', 'json'], { home: p.home, cwd: p.app }),
      keel(['-p', 'go', '--model', `scripted/${failing}`, '--output-format', 'json'], { home: p.home, cwd: p.app }),
    ])
    expect(run.status, run.stderr).toBe(0)
    const out = JSON.parse(run.stdout)
    expect(out).toMatchObject({
      reason: 'completed',
      text: 'done',
      usage: { input: 230, output: 12 },
      model: `scripted/${script}`,
      instructions: [],
      todos: [],
    })
    expect(typeof out.durationMs).toBe('number')
    const error = JSON.parse(failed.stdout)
    expect(error).toMatchObject({ reason: 'error', error: 'boom', todos: [], usage: { input: 0, output: 0 } })
  })

  test('stream-json: one system/init line first, one result line last shaped like json, the session id on every line', async () => {
    const p = project()
    writeFileSync(join(p.repo, 'AGENTS.md'), 'rules\n')
    const script = join(p.dir, 'stream.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] }, { text: 'done' }],
      }),
    )
    const model = `scripted/${script}`
    const [run, json] = await Promise.all([
      keel(['-p', 'go', '--model', model, '--output-format', 'stream-json'], { home: p.home, cwd: p.app }),
      keel(['-p', 'go', '--model', model, '--output-format', 'json'], { home: p.home, cwd: p.app }).then((json) =>
        JSON.parse(json.stdout),
      ),
    ])
    expect(run.status, run.stderr).toBe(0)
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    const init = lines[0]
    expect(init).toMatchObject({ type: 'system/init', model, cwd: p.app, instructions: [join(p.repo, 'AGENTS.md')] })
    expect(init.tools).toEqual(expect.arrayContaining(['bash', 'todo_write']))
    expect(lines.filter((l) => l.type === 'system/init')).toHaveLength(1)
    const result = lines.at(-1)
    expect(lines.filter((l) => l.type === 'result')).toHaveLength(1)
    expect(Object.keys(result).sort()).toEqual(['type', ...Object.keys(json)].sort())
    expect(result).toMatchObject({ type: 'result', reason: 'completed', sessionId: init.sessionId })
    for (const line of lines) expect(line.sessionId, JSON.stringify(line)).toBe(init.sessionId)
  })

  test('-r and sessions show take a unique id prefix; an ambiguous one lists the matches, exit 2; -c skips sessions without a prompt', async () => {
    const p = project()
    const script = join(p.dir, 'hello.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'hello' }, { text: 'again' }] }))
    const model = `scripted/${script}`
    const first = JSON.parse(
      (await keel(['-p', 'first prompt', '--model', model, '--output-format', 'json'], { home: p.home, cwd: p.app }))
        .stdout,
    )
    const dir = join(p.home, 'sessions', readdirSync(join(p.home, 'sessions'))[0]!)
    const original = readFileSync(join(dir, `${first.sessionId}.jsonl`), 'utf8')
    // Two sessions that share a prefix, and a newer one left without a prompt (as older versions wrote them).
    const twin = (id: string, body: string) =>
      writeFileSync(join(dir, `${id}.jsonl`), body.replaceAll(first.sessionId, id))
    twin('abcdef00-0000-4000-8000-000000000001', original)
    twin('abcdef00-0000-4000-8000-000000000002', original)
    const header = original.split('\n')[0]!
    const empty = 'fedcba00-0000-4000-8000-000000000003'
    writeFileSync(
      join(dir, `${empty}.jsonl`),
      header.replace(first.sessionId, empty).replace(/"createdAt":\d+/, `"createdAt":${Date.now() + 60_000}`) + '\n',
    )

    const prefix = first.sessionId.slice(0, 8)
    const [show, ambiguous, more] = await Promise.all([
      keel(['sessions', 'show', prefix], { home: p.home, cwd: p.app }),
      keel(['sessions', 'show', 'abcdef00'], { home: p.home, cwd: p.app }),
      keel(['-p', 'more', '-r', 'abcdef00', '--model', model], { home: p.home, cwd: p.app }),
    ])
    expect(show.status, show.stderr).toBe(0)
    expect(show.stdout).toContain(`Session ${first.sessionId}`)
    expect(ambiguous.status).toBe(2)
    expect(ambiguous.stderr).toContain('keel: 2 sessions start with abcdef00; type more of the id:\n')
    expect(ambiguous.stderr).toContain('abcdef00-0000-4000-8000-000000000001')
    expect(ambiguous.stderr).toContain('abcdef00-0000-4000-8000-000000000002')
    expect(more.status).toBe(2)

    const resumed = JSON.parse(
      (
        await keel(['-p', 'second prompt', '-r', prefix, '--model', model, '--output-format', 'json'], {
          home: p.home,
          cwd: p.app,
        })
      ).stdout,
    )
    expect(resumed).toMatchObject({ sessionId: first.sessionId, turn: 2 })
    const continued = JSON.parse(
      (await keel(['-p', 'third', '-c', '--model', model, '--output-format', 'json'], { home: p.home, cwd: p.app }))
        .stdout,
    )
    expect(continued.sessionId).not.toBe(empty)
  })

  test('an agent opened and closed without a prompt leaves no session file; the first prompt writes it', async () => {
    const p = project()
    const previous = process.env.KEEL_HOME
    process.env.KEEL_HOME = p.home
    const { boot, shutdown } = await import('../src/boot.ts')
    const ctx = await boot()
    try {
      writeFileSync(join(p.dir, 'one.json'), JSON.stringify({ steps: [{ text: 'hi' }] }))
      const model = await ctx.llm.create(`scripted/${join(p.dir, 'one.json')}`, { cwd: p.app })
      const idle = ctx.agents.create({ cwd: p.app, model })
      ctx.agents.close(idle)
      expect(ctx.sessions.list(p.app)).toEqual([])
      const used = ctx.agents.create({ cwd: p.app, model })
      expect(ctx.sessions.list(p.app)).toEqual([])
      await used.prompt('hello')
      expect(ctx.sessions.list(p.app).map((s) => s.id)).toEqual([used.id])
      ctx.agents.close(used)
    } finally {
      await shutdown(ctx)
      if (previous === undefined) delete process.env.KEEL_HOME
      else process.env.KEEL_HOME = previous
    }
  })
})

describe('keel serve', () => {
  test('says which instruction files its agents load', async () => {
    const p = project()
    writeFileSync(join(p.repo, 'AGENTS.md'), 'rules\n')
    const env = clean({ ...process.env, KEEL_MODEL: undefined, KEEL_HOME: p.home })
    const child = spawn(
      process.execPath,
      [join(root, 'bin/keel.js'), 'serve', '--port', '0', '--model', 'scripted/demo'],
      { cwd: p.app, env },
    )
    try {
      let stderr = ''
      const line = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (chunk) => {
          stderr += chunk
          const found = /keel: instructions: .*\n/.exec(stderr)?.[0]
          if (found) resolve(found)
        })
        child.on('exit', (code) => reject(new Error(`keel serve exited ${code}: ${stderr}`)))
      })
      expect(line).toBe('keel: instructions: ../../AGENTS.md\n')
    } finally {
      child.kill('SIGTERM')
      await new Promise((done) => child.once('close', done))
    }
  })
})
