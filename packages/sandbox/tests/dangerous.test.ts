// The files that would run code later (git hooks and config, shell rc files, editor and MCP settings) are
// unwritable in the workspace sandbox anywhere the runtime's own scan would find them, measured from the SESSION's
// cwd: under --cwd, in ACP and with serve --all it is not the process's. Real sandbox: bubblewrap, socat, ripgrep
// (skipped with a reason elsewhere, failing under CI=true, as in sandbox.test.ts).
import { execFileSync, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Context } from 'cordis'
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxService, SandboxStatus } from '@keel/sandbox'
import { runCommand } from '@keel/shell'
import { SandboxManager } from '@anthropic-ai/sandbox-runtime'
import { dangerousPaths } from '../src/dangerous.ts'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { IN_CI } from '../../../test-support/system-tools.ts'

const ctx = new Context()
ctx.plugin(sandboxPlugin, { allowedDomains: [] })
let service: SandboxService
let status: SandboxStatus
// Outside the system temp dir (only the workspace rule makes it writable) and never the process's cwd.
const root = mkdtempSync(join(homedir(), '.keel-sandbox-dangerous-'))

beforeAll(async () => {
  await ctx.start()
  await waitFor(() => ctx.get('sandbox'), 'the sandbox service')
  service = ctx.get('sandbox')!
  status = await service.status()
  if (!status.available && !IN_CI) process.stderr.write(`skipping the real-sandbox tests: ${status.reason}\n`)
})
afterAll(async () => {
  await ctx.stop().catch(() => {})
  rmSync(root, { recursive: true, force: true })
})

const runs = () => status.available || IN_CI
const unavailable = () => (status.available ? '' : `the sandbox is not available here: ${status.reason}`)

function put(path: string, text = 'ORIGINAL\n') {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

function gitInit(dir: string) {
  mkdirSync(dir, { recursive: true })
  const run = spawnSync('git', ['init', '-q', dir], { encoding: 'utf8' })
  expect(run.status, run.stderr).toBe(0)
}

async function inSandbox(cwd: string, command: string) {
  expect(status, 'the sandbox must be available here (install bubblewrap, socat, ripgrep)').toEqual({ available: true })
  const wrapped = await service.wrap(command, { cwd, level: 'workspace' })
  let text = ''
  try {
    await runCommand({
      file: wrapped.file,
      args: wrapped.args,
      cwd,
      timeoutMs: 60_000,
      signal: new AbortController().signal,
      onText: (t) => {
        text += t
      },
    })
  } finally {
    await wrapped.dispose()
  }
  return text
}

/** One shell line per path: append to it (creating its folder), and say so only if that worked. */
const attempts = (paths: readonly string[]) =>
  paths.map((path) => `(mkdir -p "$(dirname ${path})" && echo EVIL >> ${path}) 2>/dev/null && echo WROTE ${path}`)

// Existing files of each kind the runtime's scan finds, below the top of the cwd, within its depth (3: a dangerous
// file down to three levels, a dangerous folder or a nested repository's hooks and config one level higher).
const NESTED = [
  'sub/.git/hooks/pre-commit',
  'sub/.git/config',
  // Keel's own entries inside a nested repository's .git, beside the runtime's hooks and config.
  'sub/.git/info/attributes',
  'sub/.vscode/settings.json',
  'sub/.idea/workspace.xml',
  'sub/.claude/commands/go.md',
  'a/b/.bashrc',
  'a/.gitconfig',
  'a/b/.mcp.json',
  'a/.ripgreprc',
]
// At the top of the cwd the runtime denies its dangerous names whether or not they exist yet.
const TOP_MISSING = ['.bashrc', '.zshrc', '.profile', '.gitconfig', '.ripgreprc']

// The runtime, left to itself in a fresh process whose cwd is `dir` (its ripgrep scan on), prints its bwrap command.
const RUNTIME_ALONE = `
const { SandboxManager } = await import(process.argv[1])
const cwd = process.cwd()
const { argv } = await SandboxManager.wrapWithSandboxArgv('true', 'bash', {
  filesystem: { denyRead: [], allowWrite: [cwd], denyWrite: [] },
  network: { allowedDomains: [], deniedDomains: [] },
}, undefined, cwd)
SandboxManager.cleanupAfterCommand()
process.stdout.write(argv[2])
`

/** The words of a bwrap command line that name `dir` or a path below it: where something is mounted. */
const mountsBelow = (line: string, dir: string) =>
  new Set(line.split(/\s+/).filter((word) => word === dir || word.startsWith(`${dir}/`)))

describe('dangerous files below the session cwd', () => {
  // Parity with the runtime, so that an upgrade that adds a name or changes its depth fails here: for a folder holding
  // every kind at and beyond the depth, Keel's list makes the runtime mount (deny, placeholder, pinned folder) at
  // least everything its own scan of that folder does.
  test("Keel's list covers what the runtime's own scan of the same folder denies", async ({ skip }) => {
    skip(!runs(), unavailable())
    const dir = join(root, 'parity')
    gitInit(join(dir, 'sub'))
    gitInit(join(dir, 'a/deep'))
    for (const path of [
      'sub/.vscode/settings.json',
      'sub/.claude/agents/x.md',
      'sub/.git/hooks/pre-commit',
      'a/b/.bashrc',
      'a/b/c/.zshrc',
      'a/.idea/x.xml',
      'a/b/.vscode/tasks.json',
      'a/.mcp.json',
      'a/b/.gitmodules',
      'node_modules/x/.bashrc',
      'A/.BASHRC',
    ])
      put(join(dir, path))
    const runtime = createRequire(import.meta.url).resolve('@anthropic-ai/sandbox-runtime')
    const alone = execFileSync(process.execPath, ['--input-type=module', '-e', RUNTIME_ALONE, runtime], {
      cwd: dir,
      encoding: 'utf8',
    })
    // The same runtime in this process, whose cwd is elsewhere and whose own scan is off, given Keel's list.
    expect(process.cwd()).not.toBe(dir)
    const { argv } = await SandboxManager.wrapWithSandboxArgv(
      'true',
      'bash',
      {
        filesystem: { denyRead: [], allowWrite: [dir], denyWrite: (await dangerousPaths(dir)).paths },
        network: { allowedDomains: [], deniedDomains: [] },
      },
      undefined,
      dir,
    )
    SandboxManager.cleanupAfterCommand()
    const theirs = mountsBelow(alone, dir)
    const ours = mountsBelow(argv[2]!, dir)
    expect(theirs.size).toBeGreaterThan(15)
    expect([...theirs].filter((path) => !ours.has(path))).toEqual([])
  })

  test('stay unwritable in a cwd that is not the process cwd; other files there stay writable', async ({ skip }) => {
    skip(!runs(), unavailable())
    const cwd = join(root, 'project')
    gitInit(join(cwd, 'sub'))
    put(join(cwd, 'sub/.git/hooks/pre-commit'))
    put(join(cwd, 'sub/.git/info/attributes'))
    for (const path of NESTED.filter((p) => !p.startsWith('sub/.git/'))) put(join(cwd, path))
    const config = readFileSync(join(cwd, 'sub/.git/config'), 'utf8')
    expect(process.cwd()).not.toBe(cwd)
    const text = await inSandbox(
      cwd,
      [
        ...attempts([...NESTED, ...TOP_MISSING]),
        'echo fine > sub/plain.txt && echo WROTE-PLAIN',
        // A commondir points git at another folder's hooks and config; git reads it whenever it exists, so it cannot
        // be mounted over: the one the command makes is removed after it.
        'echo /tmp/elsewhere > sub/.git/commondir',
        'echo end',
      ].join('; '),
    )
    expect(text).toContain('end')
    expect(text).not.toMatch(/WROTE [^\n]/)
    expect(text).toContain('WROTE-PLAIN')
    for (const path of NESTED) expect(readFileSync(join(cwd, path), 'utf8'), path).not.toContain('EVIL')
    expect(readFileSync(join(cwd, 'sub/.git/config'), 'utf8')).toBe(config)
    for (const path of TOP_MISSING) expect(existsSync(join(cwd, path)), path).toBe(false)
    expect(existsSync(join(cwd, 'sub/.git/commondir'))).toBe(false)
    // The nested repository still works in the sandbox: objects and refs are writable.
    const commit = await inSandbox(
      join(cwd, 'sub'),
      'git -c user.name=k -c user.email=k@k add plain.txt && git -c user.name=k -c user.email=k@k commit -qm x && echo COMMITTED',
    )
    expect(commit).toContain('COMMITTED')
  })

  test('a repository a command creates works in it; the next command cannot change its hooks or config', async ({
    skip,
  }) => {
    skip(!runs(), unavailable())
    const cwd = join(root, 'fresh')
    mkdirSync(cwd)
    // Nothing is mounted where no .git is yet (a placeholder there would stop `git init`): the command that makes
    // the repository may write in it, as the runtime allows in its own cwd (README, known limits).
    const made = await inSandbox(cwd, 'git init -q . && git init -q sub && echo MADE')
    expect(made).toContain('MADE')
    const config = readFileSync(join(cwd, 'sub/.git/config'), 'utf8')
    const text = await inSandbox(
      cwd,
      [
        ...attempts(['.git/hooks/pre-push', '.git/config', 'sub/.git/hooks/pre-push', 'sub/.git/config']),
        'echo end',
      ].join('; '),
    )
    expect(text).toContain('end')
    expect(text).not.toContain('WROTE')
    expect(existsSync(join(cwd, 'sub/.git/hooks/pre-push'))).toBe(false)
    expect(readFileSync(join(cwd, 'sub/.git/config'), 'utf8')).toBe(config)
  })

  // The runtime's own scan (of the process's cwd) is off; where the process's cwd lies deep inside the session's, what
  // that scan found there is found by Keel's.
  test('a process cwd deep inside the session cwd keeps what lies below it denied', async ({ skip }) => {
    skip(!runs(), unavailable())
    const cwd = join(root, 'outer')
    const here = join(cwd, 'a/b/c')
    gitInit(join(here, 'repo'))
    put(join(here, 'x/.bashrc'))
    const previous = process.cwd()
    process.chdir(here) // restored below, before another test runs
    try {
      const text = await inSandbox(
        cwd,
        [...attempts(['a/b/c/repo/.git/config', 'a/b/c/x/.bashrc']), 'echo end'].join('; '),
      )
      expect(text).toContain('end')
      expect(text).not.toContain('WROTE')
    } finally {
      process.chdir(previous)
    }
    expect(readFileSync(join(here, 'x/.bashrc'), 'utf8')).toBe('ORIGINAL\n')
  })

  test('through the bash tool, a session whose cwd is not the process cwd', async ({ skip }) => {
    skip(!runs(), unavailable())
    let keel: Keel | undefined
    try {
      keel = await makeKeel({ plugins: [[sandboxPlugin]] })
      await waitFor(() => keel!.ctx.get('sandbox'), 'the sandbox service')
      expect(process.cwd()).not.toBe(keel.cwd)
      gitInit(join(keel.cwd, 'nested'))
      const result = await keel.ctx.tools.execute({
        callId: 'c',
        name: 'bash',
        arguments: JSON.stringify({
          command: [...attempts(['nested/.git/hooks/post-checkout', 'nested/.git/config', '.bashrc']), 'echo end'].join(
            '; ',
          ),
        }),
        agent: keel.agent({ persist: false }),
        signal: new AbortController().signal,
        sandbox: 'workspace',
      })
      const text = textOfContent(result.content)
      expect(text).toContain('end')
      expect(text).not.toContain('WROTE')
      expect(existsSync(join(keel.cwd, 'nested/.git/hooks/post-checkout'))).toBe(false)
      expect(readFileSync(join(keel.cwd, 'nested/.git/config'), 'utf8')).not.toContain('EVIL')
    } finally {
      await keel?.dispose()
    }
  })
})
