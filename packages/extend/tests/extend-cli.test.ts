// Skills, hooks and agent definitions through the real `keel -p`, with fixtures written as claude-code's
// documentation shows them (https://docs.claude.com/en/docs/claude-code/skills, …/hooks, …/sub-agents).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-extend2-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let count = 0
function repo(): { dir: string; home: string } {
  const base = join(scratch, `r${++count}`)
  const dir = join(base, 'repo')
  mkdirSync(dir, { recursive: true })
  execFileSync('git', ['init', '-q', dir])
  mkdirSync(join(base, 'home'))
  return { dir, home: join(base, 'home') }
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

function keel(args: string[], cwd: string, home: string, steps: object[]) {
  const script = join(scratch, `script-${++count}.json`)
  writeFileSync(script, JSON.stringify({ steps }))
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args, '--model', `scripted/${script}`], {
    cwd,
    env: { ...process.env, KEEL_HOME: home },
    encoding: 'utf8',
    input: '',
    timeout: 120_000,
  })
}

type Event = { type: string; data: Record<string, any> }
type Body = { system: { text: string }[]; tools: { name: string; description: string }[]; messages: unknown[] }

/** `keel` against the fake provider's Anthropic endpoint: what each request carried is in `fake.requests`. */
function anthropic(args: string[], cwd: string, home: string, url: string) {
  const child = spawn(
    process.execPath,
    [join(root, 'bin/keel.js'), ...args, '--model', 'anthropic/claude-sonnet-4-5'],
    {
      cwd,
      env: { ...process.env, KEEL_HOME: home, ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: url },
    },
  )
  child.stdin.end()
  let stderr = ''
  child.stderr.on('data', (d) => {
    stderr += d
  })
  return new Promise<{ code: number | null; stderr: string }>((done) =>
    child.on('close', (code) => done({ code, stderr })),
  )
}

function events(home: string, parentOnly = true): Event[] {
  const dir = join(home, 'sessions')
  const out: Event[] = []
  for (const folder of readdirSync(dir))
    for (const file of readdirSync(join(dir, folder)).filter((f) => f.endsWith('.jsonl'))) {
      const lines = readFileSync(join(dir, folder, file), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      if (parentOnly && lines[0].parent) continue
      out.push(...lines.slice(1))
    }
  return out
}

function results(home: string): string[] {
  return events(home)
    .filter((e) => e.type === 'tool/result')
    .map((e) => e.data.content.map((b: { text: string }) => b.text).join(''))
}

// claude-code's documented PreToolUse guard: read the JSON on stdin, exit 2 with the reason on stderr to block.
const BLOCK_RM = `#!/bin/sh
input=$(cat)
case "$input" in
  *'"command":"rm '*) echo "rm is not allowed here: use trash" >&2; exit 2 ;;
esac
exit 0
`

describe('hooks', () => {
  test('a PreToolUse hook that exits 2 on rm blocks the call with its reason; other calls run', () => {
    const { dir, home } = repo()
    put(join(home, 'hooks/block-rm.sh'), BLOCK_RM)
    put(
      join(home, 'settings.json'),
      JSON.stringify({
        hooks: {
          PreToolUse: [
            { matcher: 'Bash', hooks: [{ type: 'command', command: `sh ${join(home, 'hooks/block-rm.sh')}` }] },
          ],
        },
      }),
    )
    put(join(dir, 'keep.txt'), 'keep\n')
    const run = keel(['-p', 'clean up', '--yolo'], dir, home, [
      { toolCalls: [{ name: 'bash', arguments: { command: 'rm keep.txt' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo fine' } }] },
      { text: 'done' },
    ])
    expect(run.status, run.stderr).toBe(0)
    expect(existsSync(join(dir, 'keep.txt'))).toBe(true)
    const [blocked, fine] = results(home)
    expect(blocked).toContain('a PreToolUse hook denied it: rm is not allowed here: use trash')
    expect(fine).toContain('fine')
    const runs = events(home).filter((e) => e.type === 'hook/run')
    expect(runs.map((e) => [e.data.event, e.data.verdict])).toEqual([
      ['PreToolUse', 'block'],
      ['PreToolUse', 'ok'],
    ])
    const decision = events(home).find((e) => e.type === 'permission/decision')
    expect(decision?.data).toMatchObject({ decision: 'deny', scope: 'hook' })
  })

  test('a JSON allow from a hook never lifts a deny rule', () => {
    const { dir, home } = repo()
    const allow = `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ok by hook"}}'`
    put(
      join(home, 'settings.json'),
      JSON.stringify({
        permissions: { deny: ['bash(touch:*)'] },
        hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: allow }] }] },
      }),
    )
    const run = keel(['-p', 'go', '--mode', 'auto'], dir, home, [
      { toolCalls: [{ name: 'bash', arguments: { command: 'touch denied.txt' } }] },
      { text: 'done' },
    ])
    expect(run.status, run.stderr).toBe(0)
    expect(existsSync(join(dir, 'denied.txt'))).toBe(false)
    expect(results(home)[0]).toContain('declined')
  })

  test('a Stop hook that blocks gets one more step; stop_hook_active lets it stop', () => {
    const { dir, home } = repo()
    // As documented: check stop_hook_active so the hook does not keep the agent going forever.
    const stop = `input=$(cat); case "$input" in *'"stop_hook_active":true'*) exit 0;; esac; echo '{"decision":"block","reason":"run the tests first"}'`
    put(
      join(home, 'settings.json'),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: stop }] }] } }),
    )
    const run = keel(['-p', 'fix it', '--yolo'], dir, home, [{ text: 'first answer' }, { text: 'tests ran' }])
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toContain('tests ran')
    const log = events(home)
    const context = log.find((e) => e.type === 'user/message' && e.data.message.source === 'context')
    expect(context?.data.message.content[0].text).toBe('Stop hook: run the tests first')
    expect(log.filter((e) => e.type === 'hook/run').map((e) => e.data.verdict)).toEqual(['block', 'ok'])
  })

  test('UserPromptSubmit adds context; a hook that hangs is killed at its timeout and the turn goes on', () => {
    const { dir, home } = repo()
    put(
      join(home, 'settings.json'),
      JSON.stringify({
        hooks: {
          UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo "the build is green"' }] }],
          PostToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'sleep 30', timeout: 1 }] }],
        },
      }),
    )
    const run = keel(['-p', 'go', '--yolo'], dir, home, [
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    expect(run.status, run.stderr).toBe(0)
    const log = events(home)
    const context = log.find((e) => e.type === 'user/message' && e.data.message.source === 'context')
    expect(context?.data.message.content[0].text).toBe('the build is green')
    const post = log.find((e) => e.type === 'hook/run' && e.data.event === 'PostToolUse')
    expect(post?.data).toMatchObject({ timedOut: true, exit: null, verdict: 'error' })
  })

  test('SessionStart adds its stdout as context; a SubagentStop hook gives the child one more step', () => {
    const { dir, home } = repo()
    const subStop = `input=$(cat); case "$input" in *'"stop_hook_active":true'*) exit 0;; esac; echo "check your answer" >&2; exit 2`
    put(
      join(home, 'settings.json'),
      JSON.stringify({
        hooks: {
          SessionStart: [{ matcher: 'startup', hooks: [{ type: 'command', command: 'echo "branch: main"' }] }],
          SubagentStop: [{ hooks: [{ type: 'command', command: subStop }] }],
        },
      }),
    )
    const run = keel(['-p', 'PARENT go', '--yolo'], dir, home, [
      { when: 'PARENT', toolCalls: [{ name: 'task', arguments: { description: 'Look', prompt: 'CHILD look' } }] },
      { when: 'CHILD', text: 'first look' },
      { when: 'CHILD', text: 'checked look' },
      { when: 'PARENT', text: 'done' },
    ])
    expect(run.status, run.stderr).toBe(0)
    const parent = events(home)
    const context = parent.filter((e) => e.type === 'user/message' && e.data.message.source === 'context')
    expect(context.map((e) => e.data.message.content[0].text)).toEqual(['branch: main'])
    const all = events(home, false)
    const child = all.filter((e) => e.type === 'user/message' && e.data.message.source === 'context')
    expect(child.map((e) => e.data.message.content[0].text).sort()).toEqual([
      'SubagentStop hook: check your answer',
      'branch: main',
    ])
    expect(results(home)[0]).toContain('checked look')
  })

  test('a hook printing megabytes, or invalid JSON, is cut and read as a plain exit code', () => {
    const { dir, home } = repo()
    put(
      join(home, 'settings.json'),
      JSON.stringify({
        hooks: {
          PreToolUse: [
            { matcher: 'Bash', hooks: [{ type: 'command', command: 'head -c 5000000 /dev/zero | tr "\\0" x' }] },
            { matcher: 'Bash', hooks: [{ type: 'command', command: 'echo "{not json"' }] },
          ],
        },
      }),
    )
    const run = keel(['-p', 'go', '--yolo'], dir, home, [
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo ran' } }] },
      { text: 'done' },
    ])
    expect(run.status, run.stderr).toBe(0)
    expect(results(home)[0]).toContain('ran')
    expect(
      events(home)
        .filter((e) => e.type === 'hook/run')
        .map((e) => [e.data.exit, e.data.verdict]),
    ).toEqual([
      [0, 'ok'],
      [0, 'ok'],
    ])
  })

  test('bad entries: one warning naming the file and line each; the rest loads', () => {
    const { dir, home } = repo()
    const marker = join(dir, 'ran.txt')
    const text = JSON.stringify(
      {
        hooks: {
          PreToolUs: [{ hooks: [{ type: 'command', command: 'true' }] }],
          PostToolUse: [
            { matcher: 'Bash(', hooks: [{ type: 'command', command: 'true' }] },
            { matcher: 'Bash', hooks: [{ type: 'command', command: `touch ${marker}` }] },
          ],
        },
      },
      null,
      2,
    )
    put(join(home, 'settings.json'), text)
    const run = keel(['-p', 'go', '--yolo'], dir, home, [
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] },
      { text: 'done' },
    ])
    expect(run.status, run.stderr).toBe(0)
    const settings = join(home, 'settings.json')
    expect(run.stderr).toContain(`${settings}:3: unknown hook event "PreToolUs"`)
    expect(run.stderr).toContain(`${settings}:15: hooks.PostToolUse: matcher "Bash(" is not a valid pattern`)
    expect(existsSync(marker)).toBe(true)
  })

  test('an untrusted folder: none of its hooks run (a marker proves it); trusted, they do', () => {
    const { dir, home } = repo()
    const marker = join(dir, 'hook-ran.txt')
    put(
      join(dir, '.keel/settings.json'),
      JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `touch ${marker}` }] }] } }),
    )
    const held = keel(['-p', 'go'], dir, home, [{ text: 'done' }])
    expect(held.status, held.stderr).toBe(0)
    expect(held.stderr).toContain('held back hooks')
    expect(existsSync(marker)).toBe(false)
    const trusted = keel(['-p', 'go', '--trust'], dir, home, [{ text: 'done' }])
    expect(trusted.status, trusted.stderr).toBe(0)
    expect(existsSync(marker)).toBe(true)
  })
})

describe('agent definitions', () => {
  test("a .claude/agents definition: its tools are all the child is offered; its body is in the child's prompt", async () => {
    const { dir, home } = repo()
    put(
      join(dir, '.claude/agents/code-reviewer.md'),
      '---\nname: code-reviewer\ndescription: Expert code review specialist. Use after writing code.\ntools: Read, Grep, Glob\n---\nYou are a senior code reviewer ensuring high standards.\n',
    )
    const fake = await startFakeProvider([
      {
        toolCalls: [
          { name: 'task', arguments: { description: 'Review', prompt: 'CHILD review', agent: 'code-reviewer' } },
        ],
      },
      { text: 'reviewed' },
      { text: 'all done' },
    ])
    try {
      const run = await anthropic(['-p', 'PARENT review', '--yolo'], dir, home, fake.url)
      expect(run.code, run.stderr).toBe(0)
      const [parent, child] = fake.requests.map((r) => r.body as Body)
      const task = parent!.tools.find((tool) => tool.name === 'task')!
      expect(task.description).toContain('- code-reviewer: Expert code review specialist. Use after writing code.')
      expect(child!.tools.map((tool) => tool.name).sort()).toEqual(['glob', 'grep', 'read'])
      expect(child!.system.map((b) => b.text).join('')).toContain(
        'You are a senior code reviewer ensuring high standards.',
      )
      expect(parent!.system.map((b) => b.text).join('')).not.toContain('senior code reviewer')
    } finally {
      await fake.close()
    }
  })
})

describe('skills', () => {
  test('names and descriptions only in the system prompt; the body after the skill call; the prefix holds', async () => {
    const { dir, home } = repo()
    put(
      join(dir, '.claude/skills/pdf-processing/SKILL.md'),
      '---\nname: pdf-processing\ndescription: Extract text and tables from PDF files. Use when working with PDF files.\n---\n# PDF Processing\n\nUse pdfplumber; see FORMS.md beside this file.\n',
    )
    put(join(dir, '.claude/skills/pdf-processing/FORMS.md'), 'forms\n')
    const fake = await startFakeProvider([
      { toolCalls: [{ name: 'skill', arguments: { name: 'pdf-processing' } }] },
      { text: 'done' },
    ])
    try {
      const run = await anthropic(['-p', 'read the pdf'], dir, home, fake.url)
      expect(run.code, run.stderr).toBe(0)
      const [first, second] = fake.requests.map((r) => r.body as Body)
      const system = first!.system.map((b) => b.text).join('')
      expect(system).toContain(
        '- pdf-processing: Extract text and tables from PDF files. Use when working with PDF files.',
      )
      expect(system).not.toContain('pdfplumber')
      expect(JSON.stringify(first!.messages)).not.toContain('pdfplumber')
      expect(JSON.stringify(second!.messages)).toContain('pdfplumber')
      expect(JSON.stringify(second!.messages)).toContain(join(dir, '.claude/skills/pdf-processing'))
      // Byte-identical prefix: the system text, the tools and the first message are unchanged by the skill call.
      expect(JSON.stringify(second!.system)).toBe(JSON.stringify(first!.system))
      expect(JSON.stringify(second!.tools)).toBe(JSON.stringify(first!.tools))
    } finally {
      await fake.close()
    }
  })
})

describe("a command file's allowed-tools and model", () => {
  test('allowed-tools lets its shell-outs run without asking (never past a deny rule); model answers its turn', () => {
    const { dir, home } = repo()
    const other = join(home, 'other-model.json')
    writeFileSync(other, JSON.stringify({ steps: [{ text: 'the command model answered' }] }))
    put(
      join(home, 'commands/touchy.md'),
      `---\nallowed-tools: Bash(touch:*)\nmodel: scripted/${other}\n---\nMade: !\`touch allowed.txt; echo made\`\n`,
    )
    put(join(home, 'commands/plain.md'), 'Made: !`touch plain.txt; echo made`\n')
    const allowed = keel(['-p', '/touchy', '--mode', 'ask'], dir, home, [{ text: 'the run model answered' }])
    expect(allowed.status, allowed.stderr).toBe(0)
    expect(existsSync(join(dir, 'allowed.txt'))).toBe(true)
    expect(allowed.stdout).toContain('the command model answered')
    const asked = keel(['-p', '/plain', '--mode', 'ask'], dir, home, [{ text: 'the run model answered' }])
    expect(asked.status, asked.stderr).toBe(0)
    expect(existsSync(join(dir, 'plain.txt'))).toBe(false)
    expect(asked.stdout).toContain('the run model answered')
    put(join(home, 'settings.json'), JSON.stringify({ permissions: { deny: ['bash(touch:*)'] } }))
    rmSync(join(dir, 'allowed.txt'))
    const denied = keel(['-p', '/touchy', '--mode', 'ask'], dir, home, [{ text: 'x' }])
    expect(denied.status, denied.stderr).toBe(0)
    expect(existsSync(join(dir, 'allowed.txt'))).toBe(false)
  })
})

describe('keel config', () => {
  test('lists the skills, agents and hooks found where, what was skipped, and hooks held back', () => {
    const { dir, home } = repo()
    put(
      join(dir, '.agents/skills/lint/SKILL.md'),
      '---\nname: lint\ndescription: Lint the code\n---\nRun the linter.\n',
    )
    put(join(dir, '.claude/skills/Bad Name/SKILL.md'), '---\nname: Bad Name\ndescription: x\n---\n')
    put(
      join(home, 'agents/helper.md'),
      '---\nname: helper\ndescription: Helps\ntools:\n  - Read\n  - Grep\n---\nHelp.\n',
    )
    put(
      join(dir, '.keel/settings.json'),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'x' }] }] } }),
    )
    const run = keel(['config'], dir, home, [])
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toContain(`${join(dir, '.agents/skills')} (project): 1 found`)
    expect(run.stdout).toContain('  lint  Lint the code')
    expect(run.stdout).toContain(`${join(dir, '.claude/skills/Bad Name/SKILL.md')}: skipped, line 1: name "Bad Name"`)
    expect(run.stdout).toContain('  helper  Helps  tools: Read, Grep')
    expect(run.stdout).toContain("Hooks (the project's are held back until you trust it):")
    const json = JSON.parse(keel(['config', '--json'], dir, home, []).stdout)
    expect(json.skills.found.map((s: { name: string }) => s.name)).toEqual(['lint'])
    expect(json.agents.found[0]).toMatchObject({ name: 'helper', tools: ['Read', 'Grep'] })
  })
})
