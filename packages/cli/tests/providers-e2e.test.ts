// Through the real CLI, per provider, against the strict fake of its wire format: a reasoning reply with parallel
// tool calls (todo_write and bash), then `-c` and a second turn. The fake answers 400 to anything the real API
// rejects (test-support/fake-provider.ts), so exit 0 means every request kept the rules; the asserts below check
// that the logged bytes carry exactly what each rule requires.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { startFakeProvider, type FakeProvider, type FakeReply } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-providers-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function run(
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    // The home beside the cwd: inside it, the second run would snapshot the first one's checkpoints too.
    env: { ...process.env, KEEL_HOME: `${cwd}.home`, ...env },
    // stdin as a CI job has it: an open pipe that never writes costs `-p` its 2 s wait for piped text.
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => {
    stdout += d
  })
  child.stderr.on('data', (d) => {
    stderr += d
  })
  return new Promise((done) => child.on('close', (code) => done({ code: code ?? -1, stdout, stderr })))
}

/** Turn 1: think, then todo_write and bash in one reply; answer. Turn 2 (`-c`): think, bash; answer. */
function script(): FakeReply[] {
  return [
    {
      reasoning: 'Plan it, then look.',
      toolCalls: [
        { id: 'call_t1', name: 'todo_write', arguments: { todos: [{ content: 'Look', status: 'in_progress' }] } },
        { id: 'call_b1', name: 'bash', arguments: { command: 'echo one' } },
      ],
    },
    { text: 'Looked.' },
    { reasoning: 'Once more.', toolCalls: [{ id: 'call_b2', name: 'bash', arguments: { command: 'echo two' } }] },
    { text: 'Done.' },
  ]
}

const PROVIDERS: {
  spec: string
  env: Record<string, string>
  base: (fake: FakeProvider) => string
  check: (fake: FakeProvider) => void
}[] = [
  {
    spec: 'deepseek/deepseek-v4-flash',
    env: { DEEPSEEK_API_KEY: 'k' },
    base: (fake) => `${fake.url}/v1`,
    check: (fake) => {
      const assistants = fake.requests[3]!.body.messages.filter((m: { role: string }) => m.role === 'assistant')
      expect(assistants.map((m: { reasoning_content?: string }) => m.reasoning_content)).toEqual([
        'Plan it, then look.',
        undefined,
        'Once more.',
      ])
    },
  },
  {
    spec: 'openai-compatible/glm-5',
    env: {},
    base: (fake) => `${fake.url}/v1`,
    check: (fake) => {
      const first = fake.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'assistant')
      expect(first.reasoning_content).toBe('Plan it, then look.')
    },
  },
  {
    spec: 'openai/gpt-5.3-codex',
    env: { OPENAI_API_KEY: 'k' },
    base: (fake) => `${fake.url}/v1`,
    check: (fake) => {
      expect(new Set(fake.requests.map((r) => r.path))).toEqual(new Set(['/v1/responses']))
      const keys = fake.requests.map((r) => r.body.prompt_cache_key)
      expect(new Set(keys).size).toBe(1) // the session id, kept across -c
      const input = fake.requests[3]!.body.input as { type?: string; id?: string; call_id?: string }[]
      const order = input.map((item) => item.type ?? 'message')
      // The second turn's reasoning item comes back before its call; the first turn's with its two calls.
      expect(order.indexOf('reasoning')).toBeLessThan(order.indexOf('function_call'))
      expect(input.filter((item) => item.type === 'reasoning').map((item) => item.id)).toEqual(['rs_1', 'rs_3'])
    },
  },
  {
    spec: 'anthropic/claude-sonnet-5',
    env: { ANTHROPIC_API_KEY: 'k' },
    base: (fake) => fake.url,
    check: (fake) => {
      const last = fake.requests[3]!.body.messages.filter((m: { role: string }) => m.role === 'assistant').at(-1)
      expect(last.content[0]).toEqual({ type: 'thinking', thinking: 'Once more.', signature: 'sig-3' })
    },
  },
  {
    spec: 'openrouter/anthropic/claude-sonnet-5',
    env: { OPENROUTER_API_KEY: 'k' },
    base: (fake) => `${fake.url}/v1`,
    check: (fake) => {
      expect(fake.requests[0]!.body.reasoning).toEqual({ enabled: true })
      const first = fake.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'assistant')
      expect(first.reasoning_details).toEqual([
        {
          type: 'reasoning.text',
          text: 'Plan it, then look.',
          format: 'anthropic-claude-v1',
          index: 0,
          signature: 'or-sig-1',
        },
      ])
      expect(first.reasoning_content).toBeUndefined()
    },
  },
]

describe('each provider through keel -p and -c against its strict fake', () => {
  for (const provider of PROVIDERS) {
    test(provider.spec, async () => {
      const fake = await startFakeProvider(script())
      try {
        const cwd = join(scratch, provider.spec.replaceAll('/', '_'))
        mkdirSync(cwd)
        // The wire format is the point, not the sandbox: the bash calls run without one (as in cli.test.ts), which
        // spares each run the sandbox's start (its proxies and bubblewrap).
        const args = ['--model', provider.spec, '--base-url', provider.base(fake), '--yolo']
        const first = await run(['-p', 'look around', ...args], cwd, provider.env)
        expect(first.code, first.stderr).toBe(0)
        const second = await run(['-p', '-c', 'again', ...args], cwd, provider.env)
        expect(second.code, second.stderr).toBe(0)
        expect(fake.requests).toHaveLength(4)
        provider.check(fake)
      } finally {
        await fake.close()
      }
    })
  }

  test('thinking per model in a settings file and --effort reach the request, and keel config shows both', async () => {
    const fake = await startFakeProvider([{ text: 'ok' }])
    try {
      const cwd = join(scratch, 'settings')
      mkdirSync(join(cwd, '.keel'), { recursive: true })
      // The person's own file: an untrusted project's `models` would be held back (see trust.test.ts).
      mkdirSync(`${cwd}.home`, { recursive: true })
      const settings = { models: { 'deepseek/deepseek-v4-pro': { thinking: 'off' } } }
      writeFileSync(join(`${cwd}.home`, 'settings.json'), JSON.stringify(settings))
      const args = ['--model', 'deepseek/deepseek-v4-pro', '--effort', 'max', '--base-url', `${fake.url}/v1`]
      const result = await run(['-p', 'hi', ...args], cwd, { DEEPSEEK_API_KEY: 'k' })
      expect(result.code, result.stderr).toBe(0)
      expect(fake.requests[0]!.body).toMatchObject({ thinking: { type: 'disabled' }, reasoning_effort: 'max' })
      const config = await run(['config', '--json', ...args], cwd, {})
      expect(config.code).toBe(0)
      const shown = JSON.parse(config.stdout)
      expect(shown.settings.models['deepseek/deepseek-v4-pro']).toEqual({ thinking: 'off', reasoningEffort: 'max' })
      expect(shown.sources['models.deepseek/deepseek-v4-pro.reasoningEffort']).toBe('flag --effort')
      writeFileSync(join(cwd, '.keel/settings.json'), JSON.stringify({ models: { x: { thinking: 'maybe' } } }))
      const bad = await run(['-p', 'hi', ...args], cwd, { DEEPSEEK_API_KEY: 'k' })
      expect(bad.code).toBe(2)
      expect(bad.stderr.split('\n')).toHaveLength(2)
      expect(bad.stderr).toContain(`${join(cwd, '.keel/settings.json')}: models.x.thinking`)
    } finally {
      await fake.close()
    }
  })

  test('a retired id is one line naming the current ids, exit 2, before any request', async () => {
    const fake = await startFakeProvider([{ text: 'never' }])
    try {
      const cwd = join(scratch, 'retired')
      mkdirSync(cwd)
      const result = await run(['-p', 'hi', '--model', 'deepseek/deepseek-chat', '--base-url', `${fake.url}/v1`], cwd, {
        DEEPSEEK_API_KEY: 'k',
      })
      expect(result.code).toBe(2)
      expect(result.stderr).toBe(
        'keel: deepseek/deepseek-chat was retired on 2026-07-24; use deepseek/deepseek-v4-flash or deepseek/deepseek-v4-pro or deepseek/deepseek-flash\n',
      )
      expect(fake.requests).toHaveLength(0)
    } finally {
      await fake.close()
    }
  })
})
