// Slash commands from Markdown files through the real `keel -p`, with the scripted model: fixture folders written as
// claude-code's documentation shows them (https://docs.claude.com/en/docs/claude-code/slash-commands).
import { execFileSync, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-extend-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let count = 0
function repo(): { dir: string; home: string } {
  const base = join(scratch, `r${++count}`)
  const dir = join(base, 'repo')
  mkdirSync(dir, { recursive: true })
  execFileSync('git', ['init', '-q', dir])
  return { dir, home: join(base, 'home') }
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

function keel(args: string[], cwd: string, home: string) {
  const env: Record<string, string | undefined> = { ...process.env, KEEL_HOME: home }
  const script = join(scratch, `script-${++count}.json`)
  writeFileSync(script, JSON.stringify({ steps: [{ text: 'done' }] }))
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args, '--model', `scripted/${script}`], {
    cwd,
    env: env as NodeJS.ProcessEnv,
    encoding: 'utf8',
    input: '',
    timeout: 120_000,
  })
}

/** The prompt on the log of the one session run in `home`. */
function loggedPrompt(home: string): { text: string; command?: string; source?: string } {
  const dir = join(home, 'sessions')
  const folder = join(dir, readdirSync(dir)[0]!)
  const file = readdirSync(folder).find((f) => f.endsWith('.jsonl'))!
  const events = readFileSync(join(folder, file), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  const message = events.find((e) => e.type === 'user/message').data.message
  return { text: message.content.map((b: { text: string }) => b.text).join(''), ...message }
}

// The commit command of claude-code's documentation, as a user would have it.
const COMMIT = `---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [message]
description: Create a git commit
model: claude-3-5-haiku-20241022
---

## Context

- Current status: !\`echo ran > marker.txt; echo status-output\`

## Your task

Based on the above changes, create a single git commit: $ARGUMENTS
`

describe('slash commands from Markdown files', () => {
  test('a namespaced project command expands $1/$2, @path and !`cmd`; the expansion and its name are on the log', () => {
    const { dir, home } = repo()
    put(
      join(dir, '.keel/commands/frontend/review.md'),
      '---\ndescription: Review a component\nargument-hint: [file] [priority]\n---\nReview @$1 with priority $2.\n',
    )
    put(join(dir, 'src/button.tsx'), 'export const Button = 1\n')
    const result = keel(['-p', '/frontend:review src/button.tsx high', '--trust'], dir, home)
    expect(result.status, result.stderr).toBe(0)
    const prompt = loggedPrompt(home)
    expect(prompt.command).toBe('frontend:review')
    expect(prompt.text).toContain('Review @src/button.tsx with priority high.')
    expect(prompt.text).toContain('Contents of src/button.tsx:\n```\nexport const Button = 1\n```')
  })

  test('a copied .claude/commands layout: !`cmd` runs through the bash tool when trusted, never when not', () => {
    const trusted = repo()
    put(join(trusted.dir, '.claude/commands/commit.md'), COMMIT)
    const ran = keel(['-p', '/commit fix the bug', '--trust'], trusted.dir, trusted.home)
    expect(ran.status, ran.stderr).toBe(0)
    expect(existsSync(join(trusted.dir, 'marker.txt'))).toBe(true)
    const prompt = loggedPrompt(trusted.home)
    expect(prompt.command).toBe('commit')
    expect(prompt.text).toContain('status-output')
    expect(prompt.text).toContain('create a single git commit: fix the bug')
    expect(prompt.text).not.toContain('allowed-tools')

    const untrusted = repo()
    put(join(untrusted.dir, '.claude/commands/commit.md'), COMMIT)
    const held = keel(['-p', '/commit fix the bug'], untrusted.dir, untrusted.home)
    expect(held.status, held.stderr).toBe(0)
    expect(existsSync(join(untrusted.dir, 'marker.txt'))).toBe(false)
    expect(held.stderr).toContain('was not run: the folder is not trusted')
    expect(loggedPrompt(untrusted.home).text).toContain('was not run: the folder is not trusted')
  })

  test('keel trust covers the command files: a later change to one is held back until trusted again', () => {
    const { dir, home } = repo()
    put(join(dir, '.keel/commands/check.md'), 'Check: !`echo ran > first.txt; echo first-output`\n')
    const trust = spawnSync(process.execPath, [join(root, 'bin/keel.js'), 'trust'], {
      cwd: dir,
      env: { ...process.env, KEEL_HOME: home },
      encoding: 'utf8',
    })
    expect(trust.status, trust.stderr).toBe(0)
    expect(trust.stdout).toContain(join(dir, '.keel/commands'))
    const ran = keel(['-p', '/check'], dir, home)
    expect(ran.status, ran.stderr).toBe(0)
    expect(existsSync(join(dir, 'first.txt'))).toBe(true)
    // The same file rewritten (as a pulled commit or the agent might): its new line does not run on the old trust.
    put(join(dir, '.keel/commands/check.md'), 'Check: !`echo ran > second.txt; echo second-output`\n')
    const held = keel(['-p', '/check'], dir, home)
    expect(held.status, held.stderr).toBe(0)
    expect(existsSync(join(dir, 'second.txt'))).toBe(false)
    expect(held.stderr).toContain('held back commands')
    expect(held.stderr).toContain('was not run: the folder is not trusted')
  })

  test("the person's own commands in $KEEL_HOME/commands apply in an untrusted folder", () => {
    const { dir, home } = repo()
    put(join(home, 'commands/mine.md'), 'Mine: !`echo from-home > home-marker.txt; echo home-output`\n')
    const result = keel(['-p', '/mine'], dir, home)
    expect(result.status, result.stderr).toBe(0)
    expect(loggedPrompt(home).text).toContain('home-output')
  })

  test('!`cmd` asks nobody: what the mode would ask about is not run, as any door runs a command it did not type', () => {
    const { dir, home } = repo()
    put(join(home, 'commands/touchy.md'), 'Touch: !`touch asked.txt; echo touched`\n')
    const result = keel(['-p', '/touchy', '--mode', 'ask'], dir, home)
    expect(result.status, result.stderr).toBe(0)
    expect(existsSync(join(dir, 'asked.txt'))).toBe(false)
    expect(result.stderr).toMatch(/\/touchy: `touch asked\.txt; echo touched` was not run: the ask mode would ask/)
  })

  test('bad files: one warning each naming the file; the rest still loads', () => {
    const { dir, home } = repo()
    const commands = join(dir, '.keel/commands')
    put(join(commands, 'broken.md'), '---\ndescription: never closed\n')
    put(join(commands, 'huge.md'), 'x'.repeat(300 * 1024))
    execFileSync('mkfifo', [join(commands, 'fifo.md')])
    put(join(scratch, 'outside.md'), 'secret outside\n')
    symlinkSync(join(scratch, 'outside.md'), join(commands, 'escape.md'))
    put(join(commands, 'good.md'), 'Good: $ARGUMENTS\n')
    put(join(dir, '.claude/commands/good.md'), 'the duplicate\n')
    const result = keel(['-p', '/good a b'], dir, home)
    expect(result.status, result.stderr).toBe(0)
    expect(loggedPrompt(home).text).toBe('Good: a b')
    const warnings = result.stderr.split('\n').filter((line) => line.includes('skipped'))
    expect(warnings).toHaveLength(5)
    expect(result.stderr).toContain(
      `${join(commands, 'broken.md')}: skipped, line 1: the frontmatter block is never closed`,
    )
    expect(result.stderr).toContain(`${join(commands, 'huge.md')}: skipped, 307200 bytes`)
    expect(result.stderr).toContain(`${join(commands, 'fifo.md')}: skipped, not a regular file`)
    expect(result.stderr).toContain(`${join(commands, 'escape.md')}: skipped, a link out of its folder`)
    expect(result.stderr).toContain(`${join(dir, '.claude/commands/good.md')}: skipped, /good is already defined by`)
  })

  test('a prompt that names no command file is sent as typed', () => {
    const { dir, home } = repo()
    const result = keel(['-p', '/nothing here'], dir, home)
    expect(result.status, result.stderr).toBe(0)
    const prompt = loggedPrompt(home)
    expect(prompt.text).toBe('/nothing here')
    expect(prompt.command).toBeUndefined()
  })
})

describe('keel config', () => {
  test('lists the commands found where, the skipped files and why, and the shell-outs that wait for trust', () => {
    const { dir, home } = repo()
    put(join(dir, '.claude/commands/commit.md'), COMMIT)
    put(join(dir, '.keel/commands/broken.md'), '---\nnot a pair\n---\nx\n')
    put(join(home, 'commands/mine.md'), '---\ndescription: "My \u001b[31mown"\n---\nbody\n')
    const result = keel(['config'], dir, home)
    expect(result.status, result.stderr).toBe(0)
    expect(result.stdout).toContain(`${join(dir, '.claude/commands')} (project): 1 found`)
    expect(result.stdout).toContain('/commit  Create a git commit  (its !`cmd` lines wait for keel trust)')
    expect(result.stdout).toContain('/mine  My ␛[31mown')
    expect(result.stdout).toContain(
      `${join(dir, '.keel/commands/broken.md')}: skipped, line 2: not a "key: value" line`,
    )
    const json = JSON.parse(keel(['config', '--json'], dir, home).stdout)
    expect(json.commands.found.map((c: { name: string }) => c.name)).toEqual(['commit', 'mine'])
  })
})
