// Print mode as a script or a CI job uses it (issue 35): the answer alone on stdout, denials as results, limits that
// end the run with their own reason and exit code, and an answer held to a JSON Schema. Each run is the real binary
// against the scripted model or the fake OpenAI-compatible server on 127.0.0.1.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'
import { waitFor } from '../../../test-support/harness.ts'
import { alive, killQuietly, pidsIn, waitUntilGone } from '../../../test-support/processes.ts'
import { parseDuration, printLimits } from '../src/print-limits.ts'
import { parse, UsageError } from '../src/args.ts'
import { loadOutputSchema } from '../src/print-schema.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-headless-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
let leftovers: number[] = []
afterEach(() => {
  killQuietly(leftovers)
  leftovers = []
})

let counter = 0
/** A folder of its own per run: its cwd, its KEEL_HOME, and its script as the model. */
function setup(steps: unknown[] = []) {
  const dir = join(scratch, `run-${++counter}`)
  mkdirSync(join(dir, 'cwd'), { recursive: true })
  const script = join(dir, 'script.json')
  writeFileSync(script, JSON.stringify({ steps }))
  return { dir, home: join(dir, 'home'), cwd: join(dir, 'cwd'), model: `scripted/${script}` }
}

interface Run {
  status: number | null
  stdout: string
  stderr: string
}

/** The binary, asynchronously: the fake provider answers from this process. */
function keel(args: string[], run: { home: string; cwd: string }, env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: run.cwd,
    env: { ...process.env, KEEL_HOME: run.home, KEEL_MODE: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise((done) => child.on('close', (status) => done({ status, stdout, stderr })))
}

/** Every event of the KEEL_HOME's sessions, per session file. */
function sessionLogs(home: string): { type: string; data: Record<string, unknown> }[][] {
  const sessions = join(home, 'sessions')
  const logs = []
  for (const folder of readdirSync(sessions))
    for (const file of readdirSync(join(sessions, folder)).filter((name) => name.endsWith('.jsonl')))
      logs.push(
        readFileSync(join(sessions, folder, file), 'utf8')
          .trim()
          .split('\n')
          .slice(1)
          .map((line) => JSON.parse(line)),
      )
  return logs
}

const threeSteps = [
  { text: "I'll look at the tests first.", toolCalls: [{ name: 'bash', arguments: { command: 'echo one' } }] },
  { text: 'Several tests fail.', toolCalls: [{ name: 'bash', arguments: { command: 'echo two' } }] },
  { text: 'PEER-DONE' },
]

describe('the answer, and only the answer, on stdout', () => {
  test('text: a three-step turn prints its last text; the interim sentences and tool lines go to stderr', async () => {
    const run = setup(threeSteps)
    const result = await keel(['-p', 'probe', '--model', run.model, '--mode', 'yolo'], run)
    expect(result.status, result.stderr).toBe(0)
    expect(result.stdout).toBe('PEER-DONE\n')
    expect(result.stderr).toContain("I'll look at the tests first.\n→ echo one\nSeveral tests fail.\n→ echo two\n")
  })

  test('--quiet: stderr carries no interim text, tool lines or plan; json keeps text and adds the transcript', async () => {
    const run = setup(threeSteps)
    const quiet = await keel(['-p', 'probe', '--model', run.model, '--mode', 'yolo', '--quiet'], run)
    expect(quiet.status, quiet.stderr).toBe(0)
    expect(quiet.stdout).toBe('PEER-DONE\n')
    expect(quiet.stderr).not.toContain('Several tests fail.')
    expect(quiet.stderr).not.toContain('→')
    const json = await keel(['-p', 'probe', '--model', run.model, '--mode', 'yolo', '--output-format', 'json'], run)
    expect(JSON.parse(json.stdout)).toMatchObject({
      reason: 'completed',
      text: 'PEER-DONE',
      transcript: ["I'll look at the tests first.", 'Several tests fail.', 'PEER-DONE'],
      permissionDenials: [],
      requests: { agent: 3, subagents: 0 },
    })
  })
})

describe('denials are results', () => {
  const denied = [
    { text: 'Cleaning up.', toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf dist' } }] },
    { text: 'Could not clean.' },
  ]

  test('a denied bash is in permissionDenials (json and the stream-json result line); exit 0 with one line', async () => {
    const run = setup(denied)
    mkdirSync(join(run.cwd, 'dist'))
    const args = ['-p', 'tidy', '--model', run.model, '--mode', 'ask']
    const json = await keel([...args, '--output-format', 'json'], run)
    expect(json.status, json.stderr).toBe(0)
    const summary = JSON.parse(json.stdout)
    expect(summary.permissionDenials).toEqual([
      {
        tool: 'bash',
        summary: 'bash: rm -rf dist',
        reason: expect.stringMatching(/^ask mode asks a person first .*--allow 'bash\(rm -rf dist\)'/),
      },
    ])
    expect(json.stderr.match(/tool call was denied/g)).toHaveLength(1)
    expect(existsSync(join(run.cwd, 'dist'))).toBe(true)

    const stream = await keel([...args, '--output-format', 'stream-json'], run)
    const last = JSON.parse(stream.stdout.trim().split('\n').at(-1)!)
    expect(last).toMatchObject({ type: 'result', permissionDenials: [{ tool: 'bash', summary: 'bash: rm -rf dist' }] })
  })

  test('a rule that denies is named; --fail-on-denial (or print.failOnDenial in settings) exits 3', async () => {
    const run = setup(denied)
    const withRule = await keel(
      ['-p', 'tidy', '--model', run.model, '--mode', 'yolo', '--output-format', 'json', '--fail-on-denial'],
      run,
    )
    // yolo allows everything but what a deny rule refuses: none here, so nothing is denied and the exit stays 0.
    expect(withRule.status, withRule.stderr).toBe(0)
    mkdirSync(join(run.cwd, '.keel'))
    writeFileSync(
      join(run.cwd, '.keel/settings.json'),
      JSON.stringify({ permissions: { deny: ['bash(rm:*)'] }, print: { failOnDenial: true } }),
    )
    const refused = await keel(['-p', 'tidy', '--model', run.model, '--output-format', 'json'], run)
    expect(refused.status, refused.stderr).toBe(3)
    expect(JSON.parse(refused.stdout).permissionDenials).toEqual([
      expect.objectContaining({
        tool: 'bash',
        summary: 'bash: rm -rf dist',
        rule: 'bash(rm:*)',
        reason: expect.stringContaining('bash(rm:*)'),
      }),
    ])
    expect(refused.stderr).toContain('1 tool call was denied; exit 3 (--fail-on-denial)')
  })
})

test("a subagent's denied call is listed too, with its session", async () => {
  const run = setup([
    { when: 'PARENT', toolCalls: [{ name: 'task', arguments: { description: 'Tidy', prompt: 'CHILD: tidy up' } }] },
    { when: 'CHILD', toolCalls: [{ name: 'bash', arguments: { command: 'rm -rf build' } }] },
    { when: 'CHILD', text: 'could not' },
    { when: 'PARENT', text: 'the subagent could not tidy' },
  ])
  const result = await keel(['-p', 'PARENT: go', '--model', run.model, '--mode', 'ask', '--output-format', 'json'], run)
  expect(result.status, result.stderr).toBe(0)
  const summary = JSON.parse(result.stdout)
  expect(summary.requests).toEqual({ agent: 2, subagents: 2 })
  expect(summary.permissionDenials).toEqual([
    expect.objectContaining({ tool: 'bash', summary: 'bash: rm -rf build', sessionId: expect.any(String) }),
  ])
  expect(summary.permissionDenials[0].sessionId).not.toBe(summary.sessionId)
})

describe('limits', () => {
  test('--max-turns 2 on a five-step script: two requests reach the server, reason max-turns, exit 5', async () => {
    const steps = [1, 2, 3, 4].map((n) => ({
      text: `step ${n}`,
      toolCalls: [{ name: 'bash', arguments: { command: `echo ${n}` } }],
    }))
    const fake = await startFakeProvider([...steps, { text: 'done' }])
    try {
      const run = setup()
      const result = await keel(
        [
          '-p',
          'loop',
          '--model',
          'openai-compatible/test-model',
          '--base-url',
          `${fake.url}/v1`,
          '--mode',
          'yolo',
          '--max-turns',
          '2',
          '--output-format',
          'json',
        ],
        run,
      )
      expect(result.status, result.stderr).toBe(5)
      expect(fake.requests).toHaveLength(2)
      expect(JSON.parse(result.stdout)).toMatchObject({ reason: 'max-turns', text: '', requests: { agent: 2 } })
      expect(result.stderr).toContain('keel: the turn used its 2 model requests (--max-turns) and stopped\n')
    } finally {
      await fake.close()
    }
  })

  test('--timeout 5s during a long command: reason timeout, exit 124, no process left, the log closed', async () => {
    // Two sleepers a plain kill of the shell would leave running: one in the shell's group, one that left it.
    const sleepers = "sleep 30 & echo $! > pids; setsid sh -c 'echo $$ >> pids; exec sleep 30' & wait"
    const run = setup([{ toolCalls: [{ name: 'bash', arguments: { command: sleepers } }] }, { text: 'never' }])
    // The limit counts from the start: 5 s leaves a loaded machine's boot and first request time to reach the command.
    const pending = keel(['-p', 'wait', '--model', run.model, '--timeout', '5s', '--output-format', 'json'], run, {
      // Unsandboxed, so the pids the command writes are the host's: a sandbox has its own pid namespace.
      KEEL_MODE: 'yolo',
    })
    const file = join(run.cwd, 'pids')
    await waitFor(() => existsSync(file) && pidsIn(readFileSync(file, 'utf8')).length === 2, 'the sleepers', 20_000)
    const pids = pidsIn(readFileSync(file, 'utf8'))
    leftovers.push(...pids)
    const result = await pending
    expect(result.status, result.stderr).toBe(124)
    expect(JSON.parse(result.stdout)).toMatchObject({ reason: 'timeout', text: '' })
    expect(result.stderr).toContain('the run reached its time limit (--timeout 5s)')
    await waitUntilGone(pids)
    expect(pids.some(alive)).toBe(false)
    const [log] = sessionLogs(run.home)
    expect(log!.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })

  test('a timeout while a subagent runs closes the subagent session too', async () => {
    const run = setup([
      {
        when: 'PARENT',
        toolCalls: [{ name: 'task', arguments: { description: 'Wait', prompt: 'CHILD: wait a while' } }],
      },
      { when: 'CHILD', toolCalls: [{ name: 'bash', arguments: { command: 'sleep 30' } }] },
      { when: 'CHILD', text: 'never' },
      { when: 'PARENT', text: 'never' },
    ])
    const result = await keel(['-p', 'PARENT: go', '--model', run.model, '--timeout', '3s', '--mode', 'yolo'], run)
    expect(result.status, result.stderr).toBe(124)
    const logs = sessionLogs(run.home)
    expect(logs).toHaveLength(2)
    for (const log of logs) expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  })

  test('--max-budget-usd stops a run whose requests cost more, by the catalog price of the model', async () => {
    // deepseek-v4-flash is $0.44 per million input tokens in the catalog: the first reply alone costs $0.44.
    const fake = await startFakeProvider([
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo one' } }], usage: { input: 1_000_000, output: 10 } },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo two' } }] },
      { text: 'never' },
    ])
    try {
      const run = setup()
      const args = ['-p', 'go', '--model', 'deepseek/deepseek-v4-flash', '--base-url', `${fake.url}/v1`]
      const json = ['--output-format', 'json', '--mode', 'yolo']
      const result = await keel([...args, ...json, '--max-budget-usd', '0.10'], run, { DEEPSEEK_API_KEY: 'k' })
      expect(result.status, result.stderr).toBe(6)
      expect(result.stdout, result.stderr).not.toBe('')
      const summary = JSON.parse(result.stdout)
      expect(summary).toMatchObject({ reason: 'budget' })
      expect(summary.costUsd).toBeGreaterThanOrEqual(0.44)
      expect(fake.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(1)
    } finally {
      await fake.close()
    }
  })

  test('--max-budget-usd is reported as not checkable when no price is known for the model', async () => {
    const fake = await startFakeProvider([{ text: 'cheap' }])
    try {
      const run = setup()
      const model = 'openai-compatible/nobody-prices-this'
      const result = await keel(
        ['-p', 'hi', '--model', model, '--base-url', `${fake.url}/v1`, '--max-budget-usd', '0.5'],
        run,
      )
      expect(result.status, result.stderr).toBe(0)
      expect(result.stdout).toBe('cheap\n')
      expect(result.stderr).toContain(
        `keel: --max-budget-usd: no price is known for ${model}, so the budget of $0.5 cannot be checked\n`,
      )
    } finally {
      await fake.close()
    }
  })
})

describe('--output-schema', () => {
  const schema = {
    type: 'object',
    properties: { verdict: { enum: ['pass', 'fail'] }, files: { type: 'array', items: { type: 'string' } } },
    required: ['verdict', 'files'],
    additionalProperties: false,
  }
  function withSchema(steps: unknown[]) {
    const run = setup(steps)
    writeFileSync(join(run.cwd, 'verdict.schema.json'), JSON.stringify(schema))
    return run
  }
  const args = (run: { model: string }) => [
    '-p',
    'judge',
    '--model',
    run.model,
    '--output-schema',
    'verdict.schema.json',
    '--output-format',
    'json',
  ]

  test('a valid answer is `structured`; the prompt carried the schema', async () => {
    const run = withSchema([{ text: '{"verdict":"pass","files":["a.ts"]}' }])
    const result = await keel(args(run), run)
    expect(result.status, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({
      reason: 'completed',
      structured: { verdict: 'pass', files: ['a.ts'] },
      turn: 1,
    })
    const [log] = sessionLogs(run.home)
    const prompt = log!.find((event) => event.type === 'user/message')!
    expect(JSON.stringify(prompt.data)).toContain('additionalProperties')
  })

  test('an invalid answer gets one corrective turn naming the errors, and its valid answer is taken', async () => {
    const run = withSchema([{ text: 'It passes.' }, { text: '```json\n{"verdict":"fail","files":[]}\n```' }])
    const result = await keel(args(run), run)
    expect(result.status, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ structured: { verdict: 'fail', files: [] }, turn: 2 })
    const [log] = sessionLogs(run.home)
    const prompts = log!.filter((event) => event.type === 'user/message')
    expect(prompts).toHaveLength(2)
    expect(JSON.stringify(prompts[1]!.data)).toContain('the answer is not JSON')
  })

  test('a second invalid answer exits 4 with the validation errors', async () => {
    const run = withSchema([{ text: '{"verdict":"maybe","files":[]}' }, { text: '{"verdict":"pass"}' }])
    const result = await keel(args(run), run)
    expect(result.status, result.stderr).toBe(4)
    const summary = JSON.parse(result.stdout)
    expect(summary).toMatchObject({
      reason: 'invalid-output',
      outputErrors: ["(the answer) must have required property 'files'"],
    })
    expect(summary.structured).toBeUndefined()
    expect(result.stderr).toContain(
      "does not match --output-schema verdict.schema.json: (the answer) must have required property 'files'",
    )
    const prompts = sessionLogs(run.home)[0]!.filter((event) => event.type === 'user/message')
    expect(JSON.stringify(prompts[1]!.data)).toContain('/verdict must be equal to one of the allowed values')
  })
})

describe('bad input is one line and exit 2, before any request', () => {
  // Each bad value is checked where main() checks it (parse, printLimits, loadOutputSchema), in this process; two
  // runs of the binary, one per checker, show that such an error is one line and exit 2 before any request.
  const cases: [string[], RegExp][] = [
    [['--output-schema', 'prose.json'], /^--output-schema prose\.json: not JSON \(/],
    [['--output-schema', 'typo.json'], /^--output-schema typo\.json: not a valid JSON Schema \(/],
    [['--output-schema', 'list.json'], /^--output-schema list\.json: not a JSON Schema \(expected an object/],
    [['--output-schema', 'missing.json'], /^--output-schema missing\.json: no such file$/],
    [['--timeout', '0'], /^--timeout: expected a duration above 0/],
    [['--timeout=-5s'], /^--timeout: expected a duration above 0/],
    [['--timeout', 'soon'], /^--timeout: expected a duration above 0 .*"soon"/],
    [['--max-turns', '0'], /^--max-turns: expected a whole number/],
    [['--max-turns', '2.5'], /^--max-turns: expected a whole number/],
    [['--max-budget-usd', '0'], /^--max-budget-usd: expected an amount of US dollars above 0/],
    [['--max-budget-usd=-1'], /^--max-budget-usd: expected an amount/],
  ]
  function badFiles(cwd: string) {
    writeFileSync(join(cwd, 'prose.json'), 'a verdict, please\n')
    writeFileSync(join(cwd, 'typo.json'), JSON.stringify({ type: 'objekt' }))
    writeFileSync(join(cwd, 'list.json'), '[1, 2]')
  }

  test('schema files that are not JSON or not a schema, and limits that are 0, negative or do not parse', async () => {
    const run = setup()
    badFiles(run.cwd)
    const before = process.cwd()
    process.chdir(run.cwd)
    try {
      for (const [flags, line] of cases) {
        const { flags: parsed } = parse(['-p', 'go', '--model', 'openai-compatible/test-model', ...flags])
        const error = await (async () => {
          printLimits(parsed, undefined)
          if (parsed['output-schema']) await loadOutputSchema(parsed['output-schema'])
        })().then(
          () => undefined,
          (thrown: unknown) => thrown,
        )
        expect(error, flags.join(' ')).toBeInstanceOf(UsageError)
        expect((error as Error).message, flags.join(' ')).not.toContain('\n')
        expect((error as Error).message, flags.join(' ')).toMatch(line)
      }
    } finally {
      process.chdir(before)
    }
  })

  test('through the binary, a bad schema file and a bad limit are each one line, exit 2, and no request', async () => {
    const fake = await startFakeProvider([{ text: 'should not be asked' }])
    try {
      const run = setup()
      badFiles(run.cwd)
      for (const [flags, line] of [cases[1]!, cases[5]!]) {
        const result = await keel(
          ['-p', 'go', '--model', 'openai-compatible/test-model', '--base-url', `${fake.url}/v1`, ...flags],
          run,
        )
        expect(result.status, `${flags.join(' ')}: ${result.stderr}`).toBe(2)
        expect(result.stderr.trimEnd().split('\n'), flags.join(' ')).toHaveLength(1)
        expect(result.stderr, flags.join(' ')).toMatch(new RegExp(`^keel: ${line.source.slice(1)}`))
      }
      expect(fake.requests).toHaveLength(0)
    } finally {
      await fake.close()
    }
  })

  test('a bad limit in a settings file names the file and the key', async () => {
    const run = setup([{ text: 'x' }])
    mkdirSync(join(run.cwd, '.keel'))
    const file = join(run.cwd, '.keel/settings.json')
    writeFileSync(file, JSON.stringify({ print: { timeout: 'later' } }))
    const result = await keel(['-p', 'go', '--model', run.model], run)
    expect(result.status).toBe(2)
    expect(result.stderr).toContain(`keel: ${file}: print.timeout: expected a duration above 0`)
    writeFileSync(file, JSON.stringify({ print: { maxTurns: 1 } }))
    const limited = await keel(['-p', 'go', '--model', setup(threeSteps).model, '--mode', 'yolo'], run)
    expect(limited.status, limited.stderr).toBe(5)
    expect(limited.stderr).toContain('used its 1 model request (--max-turns)')
    // The agent's own cap ends the run the same way, as step-limit: a looping model is not a success either.
    // A plugin setting widens nothing here, but a project file's plugin settings wait for trust: --trust for the run.
    writeFileSync(file, JSON.stringify({ agent: { maxSteps: 2 } }))
    const capped = await keel(
      ['-p', 'go', '--model', setup(threeSteps).model, '--mode', 'yolo', '--output-format', 'json', '--trust'],
      run,
    )
    expect(capped.status, capped.stderr).toBe(5)
    expect(JSON.parse(capped.stdout)).toMatchObject({ reason: 'step-limit', requests: { agent: 2 } })
  })
})

describe('the limits as parsed', () => {
  test('durations: a bare number is seconds; ms, s, m and h', () => {
    expect([parseDuration('90'), parseDuration('1.5m'), parseDuration('500ms'), parseDuration('2h')]).toEqual([
      90_000, 90_000, 500, 7_200_000,
    ])
    expect(parseDuration('-1s')).toBeUndefined()
    expect(parseDuration('1 week')).toBeUndefined()
  })

  test('a print-mode flag without -p is refused, not ignored', () => {
    expect(() => parse(['--timeout', '5m'])).toThrow('--timeout goes with -p (print mode)')
    expect(() => parse(['serve', '--output-schema', 's.json'])).toThrow('--output-schema goes with -p')
  })

  test('a flag wins over the settings', () => {
    const { flags } = parse(['-p', 'x', '--max-turns', '3'])
    const settings = {
      merged: { values: { print: { maxTurns: 9, timeout: '1m' } }, sources: {} },
    } as unknown as Parameters<typeof printLimits>[1]
    expect(printLimits(flags, settings)).toEqual({ maxTurns: 3, timeoutMs: 60_000, failOnDenial: false })
  })
})
