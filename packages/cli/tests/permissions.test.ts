// Print mode's permission policy end to end: the real binary, the scripted model, the real tools and sandbox, and
// the decisions read back from the session log on disk.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeEach, describe, expect, test } from 'vitest'
import { resolveMode } from '../src/mode.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-perm-cli-'))
const home = join(scratch, 'home')
const work = join(scratch, 'work')
// The workspace sandbox lets commands write the system temp dir, so the "outside" target for bash is in the home
// folder (the repository itself may sit under the temp dir, as a CI clone can).
const outsideBash = join(homedir(), `.keel-perm-test-${process.pid}.txt`)
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  rmSync(outsideBash, { force: true })
})
beforeEach(() => {
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  for (const name of ['outside.txt', 'outside-bash.txt']) rmSync(join(scratch, name), { force: true })
})

// The sandbox needs bubblewrap; CI installs it, so there a missing bwrap fails these tests instead of skipping them.
const HAS_BWRAP = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-user', 'true']).status === 0
// `npm run test:unit` (KEEL_TESTS=unit) leaves the sandbox out.
const needsSandbox = process.env.KEEL_TESTS !== 'unit' && (HAS_BWRAP || process.env.CI === 'true')

function keel(args: string[], env: Record<string, string | undefined> = {}) {
  const merged: Record<string, string | undefined> = { ...process.env, KEEL_HOME: home, KEEL_MODE: undefined, ...env }
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key]
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: work,
    env: merged as NodeJS.ProcessEnv,
    encoding: 'utf8',
    input: '',
  })
}

function script(steps: unknown[]): string {
  const path = join(scratch, `script-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, JSON.stringify({ steps }))
  return `scripted/${path}`
}

/** The events of the newest session log under KEEL_HOME. */
function lastLog(): { type: string; data: Record<string, unknown> }[] {
  const dir = join(home, 'sessions')
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((f) => f.isFile() && f.name.endsWith('.jsonl'))
    .map((f) => join(f.parentPath, f.name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
  return readFileSync(files[0]!, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line))
}
const decisions = (events: ReturnType<typeof lastLog>) =>
  events.filter((e) => e.type === 'permission/decision').map((e) => e.data)

const write = (id: string, path: string, content = 'x\n') => ({
  toolCalls: [{ id, name: 'write', arguments: { path, content } }],
})
const bash = (id: string, command: string) => ({ toolCalls: [{ id, name: 'bash', arguments: { command } }] })

describe('keel -p: the default is auto', () => {
  test.runIf(needsSandbox)(
    'a write inside the cwd runs, one outside is denied; bash runs in the workspace sandbox',
    () => {
      const model = script([
        write('w1', 'inside.txt', 'in\n'),
        write('w2', join(scratch, 'outside.txt')),
        bash('b1', `echo ok > made-by-bash.txt; echo x > ${outsideBash} || echo blocked`),
        { text: 'done' },
      ])
      const result = keel(['-p', 'go', '--model', model])
      expect(result.status).toBe(0)
      expect(readFileSync(join(work, 'inside.txt'), 'utf8')).toBe('in\n')
      expect(existsSync(join(scratch, 'outside.txt'))).toBe(false)
      expect(readFileSync(join(work, 'made-by-bash.txt'), 'utf8')).toBe('ok\n')
      expect(existsSync(outsideBash)).toBe(false)
      expect(result.stderr).toContain(
        `declined: denied by auto mode: ${join(scratch, 'outside.txt')} is outside the working directory`,
      )
      const events = lastLog()
      expect(decisions(events)).toEqual([
        { callId: 'w1', decision: 'allow', scope: 'mode', mode: 'auto' },
        { callId: 'w2', decision: 'deny', scope: 'mode', mode: 'auto' },
        { callId: 'b1', decision: 'allow', scope: 'mode', mode: 'auto' },
      ])
      const bashResult = events.find((e) => e.type === 'tool/result' && e.data.callId === 'b1')!
      expect(JSON.stringify(bashResult.data.content)).toContain('blocked')

      // sessions show renders the decisions under their calls.
      const sessionId = /keel: session (\S+)/.exec(result.stderr)![1]!
      const shown = keel(['sessions', 'show', sessionId])
      expect(shown.stdout).toContain('✓ allowed by auto mode')
      expect(shown.stdout).toContain('✗ denied by auto mode')
    },
  )

  test.runIf(needsSandbox)(
    '--mode read-only denies writes and runs bash in a sandbox where nothing is writable',
    () => {
      const model = script([
        write('w1', 'a.txt'),
        bash('b1', 'touch b.txt || echo read-only-fs; echo hi'),
        { text: 'done' },
      ])
      const result = keel(['-p', 'go', '--model', model, '--mode', 'read-only'])
      expect(result.status).toBe(0)
      expect(existsSync(join(work, 'a.txt'))).toBe(false)
      expect(existsSync(join(work, 'b.txt'))).toBe(false)
      expect(result.stderr).toContain('declined: denied by read-only mode')
      expect(decisions(lastLog())).toEqual([
        { callId: 'w1', decision: 'deny', scope: 'mode', mode: 'read-only' },
        { callId: 'b1', decision: 'allow', scope: 'mode', mode: 'read-only' },
      ])
      expect(
        JSON.stringify(lastLog().find((e) => e.type === 'tool/result' && e.data.callId === 'b1')!.data.content),
      ).toContain('read-only-fs')
    },
  )
})

describe('keel -p: ask, --allow, --yolo', () => {
  test('an ask outcome is a denial with the reason on stderr, in every output format', () => {
    for (const format of ['text', 'json']) {
      const model = script([write('w1', 'a.txt'), { text: 'done' }])
      const result = keel(['-p', 'go', '--model', model, '--mode', 'ask', '--output-format', format])
      expect(result.status).toBe(0)
      expect(existsSync(join(work, 'a.txt'))).toBe(false)
      expect(result.stderr).toContain(
        "declined: ask mode asks a person first (write changes files) and there is no one to ask here; --allow 'write(a.txt)' or --mode auto lets it run",
      )
      const events = lastLog()
      expect(events.filter((e) => e.type.startsWith('permission/')).map((e) => [e.type, e.data])).toEqual([
        ['permission/request', { callId: 'w1', tool: 'write', summary: 'write a.txt' }],
        ['permission/decision', { callId: 'w1', decision: 'deny', scope: 'mode', mode: 'ask' }],
      ])
    }
  })

  test('--allow adds a rule for the run; KEEL_MODE sets the mode; a deny shows in sessions show', () => {
    const model = script([write('w1', 'src/a.ts'), write('w2', 'b.txt'), { text: 'done' }])
    const result = keel(['-p', 'go', '--model', model, '--allow', 'write(src/**)', '--allow', 'bash(npm test:*)'], {
      KEEL_MODE: 'ask',
    })
    expect(result.status).toBe(0)
    expect(existsSync(join(work, 'src/a.ts'))).toBe(true)
    expect(existsSync(join(work, 'b.txt'))).toBe(false)
    expect(decisions(lastLog())).toEqual([
      { callId: 'w1', decision: 'allow', scope: 'rule', rule: 'write(src/**)' },
      { callId: 'w2', decision: 'deny', scope: 'mode', mode: 'ask' },
    ])
    const sessionId = /keel: session (\S+)/.exec(result.stderr)![1]!
    const shown = keel(['sessions', 'show', sessionId]).stdout
    expect(shown).toContain('✓ allowed by rule write(src/**)')
    expect(shown).toContain('? asked: write b.txt')
    expect(shown).toContain('✗ denied by ask mode')
  })

  test('--yolo prints one warning line, and the policy lets a write outside the cwd through', () => {
    const model = script([write('w1', join(scratch, 'outside.txt')), { text: 'done' }])
    const result = keel(['-p', 'go', '--model', model, '--yolo'])
    expect(result.status).toBe(0)
    expect(result.stderr.split('\n').filter((line) => line.includes('yolo mode'))).toEqual([
      'keel: yolo mode: every tool runs without asking and commands run outside the sandbox',
    ])
    // (The fs tools' own confinement, allowOutsideCwd, still applies: that is @keel/fs's setting.)
    expect(decisions(lastLog())).toEqual([{ callId: 'w1', decision: 'allow', scope: 'mode', mode: 'yolo' }])
  })

  test('bad policy flags are one line and exit 2', () => {
    const model = script([{ text: 'done' }])
    const cases: [string[], Record<string, string>, string][] = [
      [['--mode', 'careful'], {}, 'keel: --mode must be one of read-only, plan, ask, auto, yolo, not "careful"\n'],
      [['--yolo', '--mode', 'ask'], {}, 'keel: --yolo and --mode ask contradict each other; use one\n'],
      [[], { KEEL_MODE: 'nope' }, 'keel: KEEL_MODE must be one of read-only, plan, ask, auto, yolo, not "nope"\n'],
      [
        ['--allow', 'rm -rf'],
        {},
        'keel: --allow: not a rule: "rm -rf" (expected tool, tool(specifier) or mcp__server__*)\n',
      ],
    ]
    for (const [flags, env, stderr] of cases) {
      const result = keel(['-p', 'go', '--model', model, ...flags], env)
      expect([flags, result.status, result.stderr]).toEqual([flags, 2, stderr])
    }
  })
})

describe('resolveMode', () => {
  test('flags, then KEEL_MODE, then settings, then the front door', () => {
    expect(resolveMode({ mode: 'read-only' }, { KEEL_MODE: 'yolo' }, 'ask', 'print')).toEqual({
      mode: 'read-only',
      source: 'flag',
    })
    expect(resolveMode({ yolo: true }, {}, 'ask', 'interactive')).toEqual({ mode: 'yolo', source: 'flag' })
    expect(resolveMode({}, { KEEL_MODE: 'yolo' }, 'ask', 'print')).toEqual({ mode: 'yolo', source: 'env' })
    expect(resolveMode({}, {}, 'read-only', 'print')).toEqual({ mode: 'read-only', source: 'settings' })
    expect(resolveMode({}, {}, undefined, 'print')).toEqual({ mode: 'auto', source: 'default' })
    for (const door of ['interactive', 'serve', 'acp'] as const)
      expect(resolveMode({}, { KEEL_MODE: '' }, undefined, door)).toEqual({ mode: 'ask', source: 'default' })
  })
})

describe('keel -p: deny rules see what a command runs; read-only means it cannot write or run anything', () => {
  test.runIf(needsSandbox)(
    'auto: launchers, find -delete, sh -c, git global options and a variable command never walk around a deny rule',
    () => {
      mkdirSync(home, { recursive: true })
      writeFileSync(
        join(home, 'settings.json'),
        JSON.stringify({ permissions: { deny: ['bash(rm:*)', 'bash(git push:*)'] } }),
      )
      const victims = ['v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8']
      for (const name of victims) writeFileSync(join(work, name), 'keep\n')
      spawnSync('git', ['init', '-q'], { cwd: work })
      const commands = [
        'env FOO=1 rm -f v1',
        'timeout 5 rm -f v2',
        'find . -name v3 -delete',
        'x=rm; $x v4',
        'echo v5 | xargs rm',
        "sh -c 'rm v6'",
        'nice -n 5 command rm v7',
        'for f in v8; do rm "$f"; done',
        'git -C . push',
        'git --no-pager -c a.b=c push',
      ]
      const model = script([...commands.map((command, i) => bash(`b${i}`, command)), { text: 'done' }])
      try {
        const result = keel(['-p', 'go', '--model', model])
        expect(result.status).toBe(0)
        expect(victims.filter((name) => !existsSync(join(work, name)))).toEqual([])
        const verdicts = decisions(lastLog()).map((d) => [commands[Number(String(d.callId).slice(1))], d.decision])
        expect(verdicts).toEqual(commands.map((command) => [command, 'deny']))
      } finally {
        rmSync(join(home, 'settings.json'), { force: true })
      }
    },
    60_000,
  )

  test.runIf(needsSandbox)(
    'ask: sort --compress-program and file -C ask; cd && ls, sed -n, git branch, jq, test -f run unasked',
    () => {
      spawnSync('git', ['init', '-q'], { cwd: work })
      writeFileSync(join(work, 'script.txt'), 'touch PWNED\n'.repeat(5000))
      writeFileSync(join(work, 'p.json'), '{"a":1}\n')
      mkdirSync(join(work, 'sub'))
      const asks = [
        'sort -S 1k --compress-program=sh script.txt | head -1',
        'file -C -m mymagic',
        'sort --compress=sh f',
      ]
      const reads = [
        'cd sub && ls',
        "sed -n '1,2p' script.txt",
        'git branch',
        'jq .a p.json',
        'test -f p.json && echo yes',
      ]
      const all = [...asks, ...reads]
      const model = script([...all.map((command, i) => bash(`b${i}`, command)), { text: 'done' }])
      const result = keel(['-p', 'go', '--model', model, '--mode', 'ask'])
      expect(result.status).toBe(0)
      expect(existsSync(join(work, 'PWNED'))).toBe(false)
      expect(existsSync(join(work, 'mymagic.mgc'))).toBe(false)
      const verdicts = decisions(lastLog()).map((d) => [all[Number(String(d.callId).slice(1))], d.decision, d.scope])
      expect(verdicts).toEqual([
        ...asks.map((command) => [command, 'deny', 'mode']),
        ...reads.map((command) => [command, 'allow', 'mode']),
      ])
    },
    60_000,
  )
})

describe('sandbox.allowedDomains', () => {
  test('an entry the sandbox refuses fails the start in one line naming the file and key; good ones start', () => {
    mkdirSync(home, { recursive: true })
    const settings = join(home, 'settings.json')
    try {
      for (const bad of ['*', 'http://example.com', '*.com', 'example.com:99999']) {
        writeFileSync(settings, JSON.stringify({ sandbox: { allowedDomains: ['registry.npmjs.org', bad] } }))
        const result = keel(['-p', 'go', '--model', script([{ text: 'never' }])])
        expect([bad, result.status, result.stdout]).toEqual([bad, 2, ''])
        expect(result.stderr).toContain(
          `keel: ${settings}: sandbox.allowedDomains: ${JSON.stringify(bad)} is refused. Invalid domain pattern`,
        )
        expect(result.stderr.trim().split('\n')).toHaveLength(1)
      }
      writeFileSync(settings, JSON.stringify({ sandbox: { allowedDomains: ['*.npmjs.org', 'github.com:443'] } }))
      const good = keel(['-p', 'go', '--model', script([{ text: 'started' }])])
      expect([good.status, good.stdout]).toEqual([0, 'started\n'])
    } finally {
      rmSync(settings, { force: true })
    }
  })
})
