// What a long run costs and survives, through the real CLI against the fake Anthropic server: prompt-cache
// breakpoints and a byte-stable prefix across steps, `-c` and a compaction; a 429 with retry-after waited out (and
// cancelled by SIGTERM mid-wait); the -p JSON cost equal to the catalog's arithmetic, a subagent's included.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test as base, describe, expect } from 'vitest'
import { requestCost } from '@keel/session/cost'
import { modelInfo } from '../../llm/src/catalog.ts'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const MODEL = 'claude-sonnet-4-5'
const PRICE = modelInfo('anthropic', MODEL).price!

interface Scratch {
  dir: string
  fake?: FakeProvider
  /** Starts this test's fake Anthropic server. */
  serve(replies: FakeReply[]): Promise<FakeProvider>
}

// Each test has a folder and a fake server of its own, so the tests run side by side: most of their time is waiting
// (on retry-after, on the child).
const test = base.extend<{ scratch: Scratch }>({
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads which fixtures this one needs from the pattern
  scratch: async ({}, use) => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-cost-'))
    mkdirSync(join(dir, 'home'))
    // The runs' cwd, beside the home: a cwd holding the home would snapshot the earlier runs' checkpoints too.
    mkdirSync(join(dir, 'work'))
    const scratch: Scratch = {
      dir,
      serve: async (replies) => (scratch.fake = await startFakeProvider(replies)),
    }
    settings(scratch, { llm: { retryBaseDelayMs: 10 } })
    await use(scratch)
    await scratch.fake?.close()
    rmSync(dir, { recursive: true, force: true })
  },
})

function settings(scratch: Scratch, values: object): void {
  writeFileSync(join(scratch.dir, 'home', 'settings.json'), JSON.stringify(values))
}

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function keel(
  scratch: Scratch,
  args: string[],
  onStderr?: (text: string, child: ReturnType<typeof spawn>) => void,
): Promise<Run> {
  const child = spawn(
    process.execPath,
    [join(root, 'bin/keel.js'), '--model', `anthropic/${MODEL}`, '--output-format', 'json', ...args],
    {
      cwd: join(scratch.dir, 'work'),
      env: {
        ...process.env,
        KEEL_HOME: join(scratch.dir, 'home'),
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: scratch.fake!.url,
      },
    },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => {
    stdout += d
  })
  child.stderr.on('data', (d) => {
    stderr += d
    onStderr?.(stderr, child)
  })
  child.stdin.end()
  return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })))
}

type Body = {
  system: { text: string; cache_control?: object }[]
  tools: { name: string; cache_control?: object }[]
  messages: { role: string; content: { type: string; cache_control?: object }[] }[]
}

/** Where `cache_control` sits in a body: `tools[i]`, `system[i]`, `messages[i][j]`. */
function breakpoints(body: Body): string[] {
  const at: string[] = []
  for (const [i, tool] of body.tools.entries()) if (tool.cache_control) at.push(`tools[${i}]`)
  for (const [i, block] of body.system.entries()) if (block.cache_control) at.push(`system[${i}]`)
  for (const [i, message] of body.messages.entries())
    for (const [j, block] of message.content.entries()) if (block.cache_control) at.push(`messages[${i}][${j}]`)
  return at
}

/** The body with every cache_control removed: what the cache's prefix is made of. */
function bare(body: Body): Body {
  return JSON.parse(JSON.stringify(body, (key, value) => (key === 'cache_control' ? undefined : value)))
}

function expectFollowing(body: Body) {
  const last = body.messages.length - 1
  expect(breakpoints(body)).toEqual([
    `tools[${body.tools.length - 1}]`,
    'system[0]',
    `messages[${last}][${body.messages[last]!.content.length - 1}]`,
  ])
}

describe.concurrent('prompt caching through keel -p', () => {
  test('breakpoints follow the conversation; the prefix is byte-identical across steps, -c and a compaction', async ({
    scratch,
    expect,
  }) => {
    const fake = await scratch.serve([
      {
        toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }],
        usage: { input: 3000, output: 40, cacheWrite: 2900 },
      },
      { text: 'done', usage: { input: 3100, output: 10, cacheRead: 2900, cacheWrite: 150 } },
      { text: 'again', usage: { input: 9000, output: 10, cacheRead: 3000 } },
      { text: 'Summary: the person asked twice; echo hi ran.', usage: { input: 900, output: 30 } },
      { text: 'after', usage: { input: 1200, output: 5, cacheWrite: 1100 } },
    ])
    const first = await keel(scratch, ['-p', 'first'])
    expect(first.code, first.stderr).toBe(0)
    const result = JSON.parse(first.stdout)
    expect(result.usage).toEqual({ input: 6100, output: 50, cacheRead: 2900, cacheWrite: 3050 })

    const second = await keel(scratch, ['-p', '-c', 'second'])
    expect(second.code, second.stderr).toBe(0)
    // The next run compacts first: its estimate (9000 tokens) is past the threshold of a 4000-token window.
    settings(scratch, { llm: { retryBaseDelayMs: 10 }, compaction: { contextWindow: 4000, keepTurns: 1 } })
    const third = await keel(scratch, ['-p', '-c', 'third'])
    expect(third.code, third.stderr).toBe(0)
    expect(JSON.parse(third.stdout).costs.map((part: { source: string }) => part.source)).toEqual([
      'model',
      'compaction',
    ])

    const bodies = fake.requests.map((request) => request.body as Body)
    expect(bodies).toHaveLength(5)
    const steps = [bodies[0]!, bodies[1]!, bodies[2]!, bodies[4]!]
    for (const body of steps) expectFollowing(body)
    // tools and system, byte for byte, in every step of every run, the one after the compaction included.
    const prefix = (body: Body) => JSON.stringify(bare(body).tools) + JSON.stringify(bare(body).system)
    for (const body of steps) expect(prefix(body)).toBe(prefix(bodies[0]!))
    // Each request's messages start with the previous one's, across steps and across -c.
    const messages = (body: Body) => JSON.stringify(bare(body).messages).slice(0, -1)
    expect(messages(bodies[1]!).startsWith(messages(bodies[0]!))).toBe(true)
    expect(messages(bodies[2]!).startsWith(messages(bodies[1]!))).toBe(true)
  }, 60_000)
})

describe.concurrent('cost in the -p JSON', () => {
  test('equals the catalog arithmetic over the turn’s requests, a subagent’s included and listed', async ({
    scratch,
    expect,
  }) => {
    const usages = [
      { input: 2000, output: 100, cacheWrite: 1800 },
      { input: 1500, output: 60, cacheRead: 1200 },
      { input: 2300, output: 20, cacheRead: 1800, cacheWrite: 400 },
    ]
    await scratch.serve([
      {
        toolCalls: [{ name: 'task', arguments: { description: 'Look', prompt: 'CHILD: look around' } }],
        usage: usages[0],
      },
      { text: 'Nothing here.', usage: usages[1] },
      { text: 'The child looked.', usage: usages[2] },
    ])
    const run = await keel(scratch, ['-p', 'PARENT: delegate'])
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout)
    const each = usages.map((usage) => requestCost(usage, PRICE))
    expect(result.costUsd).toBeCloseTo(each[0]! + each[1]! + each[2]!, 6)
    expect(result.costs).toHaveLength(2)
    expect(result.costs[0]).toMatchObject({ source: 'model', requests: 2 })
    expect(result.costs[0].costUsd).toBeCloseTo(each[0]! + each[2]!, 6)
    expect(result.costs[1]).toMatchObject({ source: 'subagent', requests: 1 })
    expect(result.costs[1].costUsd).toBeCloseTo(each[1]!, 6)
    expect(result.usage).toEqual({ input: 5800, output: 180, cacheRead: 3000, cacheWrite: 2200 })
  }, 60_000)

  test('a model with no known price says null, and sessions show says "cost unknown", never $0', async ({
    scratch,
    expect,
  }) => {
    const fake = await scratch.serve([{ text: 'hi', usage: { input: 10, output: 1 } }])
    settings(scratch, { llm: { retryBaseDelayMs: 10 } })
    const child = spawn(
      process.execPath,
      [join(root, 'bin/keel.js'), '--model', 'anthropic/claude-unreleased-9', '--output-format', 'json', '-p', 'hi'],
      {
        cwd: join(scratch.dir, 'work'),
        env: {
          ...process.env,
          KEEL_HOME: join(scratch.dir, 'home'),
          ANTHROPIC_API_KEY: 'k',
          ANTHROPIC_BASE_URL: fake.url,
        },
      },
    )
    let stdout = ''
    child.stdout.on('data', (d) => {
      stdout += d
    })
    child.stdin.end()
    expect(await new Promise((done) => child.on('close', done))).toBe(0)
    const result = JSON.parse(stdout)
    expect(result.costUsd).toBeNull()
    const shown = await keel(scratch, ['sessions', 'show', result.sessionId])
    expect(shown.stdout).toMatch(/cost +cost unknown/)
    expect(shown.stdout).not.toContain('$0.00')
  }, 60_000)
})

describe.concurrent('the catalog through settings.json', () => {
  test('an override in the user settings wins (max_tokens); a project file may not set a price', async ({
    scratch,
    expect,
  }) => {
    const fake = await scratch.serve([{ text: 'ok' }, { text: 'ok' }])
    const run = await keel(scratch, ['-p', 'hi'])
    expect(run.code, run.stderr).toBe(0)
    expect(fake.requests[0]!.body.max_tokens).toBe(modelInfo('anthropic', MODEL).maxOutput)
    settings(scratch, { models: { [`anthropic/${MODEL}`]: { maxOutput: 1234 } } })
    const overridden = await keel(scratch, ['-p', 'hi'])
    expect(overridden.code, overridden.stderr).toBe(0)
    expect(fake.requests[1]!.body.max_tokens).toBe(1234)
    mkdirSync(join(scratch.dir, 'work', '.git'))
    mkdirSync(join(scratch.dir, 'work', '.keel'))
    writeFileSync(
      join(scratch.dir, 'work', '.keel', 'settings.json'),
      JSON.stringify({ models: { [`anthropic/${MODEL}`]: { price: { input: 0, output: 0 } } } }),
    )
    const refused = await keel(scratch, ['-p', 'hi'])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(
      /settings\.json: models\.anthropic\/claude-sonnet-4-5\.price is read only from your own settings/,
    )
    expect(fake.requests).toHaveLength(2)
  }, 60_000)
})

describe.concurrent('retries through keel -p', () => {
  test('429 with retry-after: 1, twice, then a stream: exit 0, attempts ≥ 1 s apart, the wait on stderr', async ({
    scratch,
    expect,
  }) => {
    const limited = { status: 429, headers: { 'retry-after': '1' } }
    const fake = await scratch.serve([limited, limited, { text: 'made it' }])
    const run = await keel(scratch, ['-p', 'hi'])
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout).text).toBe('made it')
    const at = fake.requests.map((request) => request.at)
    expect(at).toHaveLength(3)
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950)
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(950)
    expect(run.stderr).toContain('keel: rate limited by anthropic, retrying in 1 s (2/6)')
    expect(run.stderr).toContain('keel: rate limited by anthropic, retrying in 1 s (3/6)')
  }, 60_000)

  test('retry-after: 9999 is capped by llm.retryMaxWaitMs', async ({ scratch, expect }) => {
    settings(scratch, { llm: { retryBaseDelayMs: 10, retryMaxWaitMs: 500 } })
    const fake = await scratch.serve([{ status: 429, headers: { 'retry-after': '9999' } }, { text: 'ok' }])
    const run = await keel(scratch, ['-p', 'hi'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).toContain('retrying in 1 s (2/6)')
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeLessThan(5000)
  }, 60_000)

  test('SIGTERM during the wait ends the run at once (exit 143)', async ({ scratch, expect }) => {
    const fake = await scratch.serve([{ status: 429, headers: { 'retry-after': '60' } }, { text: 'never' }])
    let signalled = 0
    const run = await keel(scratch, ['-p', 'hi'], (text, child) => {
      if (!signalled && text.includes('retrying in')) {
        signalled = Date.now()
        child.kill('SIGTERM')
      }
    })
    expect(run.code).toBe(143)
    expect(Date.now() - signalled).toBeLessThan(5000)
    expect(fake.requests).toHaveLength(1)
  }, 60_000)
})
