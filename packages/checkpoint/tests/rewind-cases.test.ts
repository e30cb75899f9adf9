// Rewinds that must not take or change the person's files (issue 33), through the real binary: a file a changed
// `.gitignore` let a snapshot take, files whose bytes a `.gitattributes` would rewrite, and a nested repository.
import { createHash } from 'node:crypto'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-rewind-cases-'))
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

let scripts = 0
/** One print-mode turn (continuing the folder's session after the first) whose model runs `command` in bash. */
function turn(cwd: string, command: string, first = false) {
  const path = join(scratch, `script-${++scripts}.json`)
  writeFileSync(
    path,
    JSON.stringify({ steps: [{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'ok' }] }),
  )
  const out = keel(['-p', 'go', ...(first ? [] : ['-c']), '--yolo', '--model', `scripted/${path}`], cwd)
  expect(out.status, out.stderr).toBe(0)
  return out
}

function sessionId(cwd: string): string {
  const out = keel(['sessions', 'list', '--json'], cwd)
  return JSON.parse(out.stdout)[0].id
}

function project(files: Record<string, string | Buffer>): string {
  const cwd = mkdtempSync(join(scratch, 'project-'))
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(cwd, name, '..'), { recursive: true })
    writeFileSync(join(cwd, name), content)
  }
  execFileSync('bash', ['-c', 'git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init'], {
    cwd,
  })
  return cwd
}

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

test('a file ignored in the target (a .gitignore the agent changed let a snapshot take it) is a conflict, not deleted', () => {
  const cwd = project({ '.gitignore': '.env\nnode_modules/\n', 'app.txt': 'v1\n' })
  writeFileSync(join(cwd, '.env'), 'SECRET=hunter2\n')
  mkdirSync(join(cwd, 'build'))
  writeFileSync(join(cwd, 'build', 'out.js'), 'built\n')
  turn(cwd, 'echo v2 > app.txt', true)
  // The agent "tidies" .gitignore: .env and build/ are no longer ignored, so the next snapshots hold them.
  turn(cwd, 'printf "node_modules/\\n" > .gitignore; echo v3 > app.txt')
  const id = sessionId(cwd)
  const refused = keel(['sessions', 'rewind', id, '--to', '1', '--files'], cwd)
  expect(refused.status).toBe(1)
  expect(refused.stderr).toContain("or are ignored by git (not the agent's), and would be overwritten or deleted: .env")
  expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe('SECRET=hunter2\n')
  expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('v3\n')
  // With --force the person chose it; the undo brings it back.
  const forced = keel(['sessions', 'rewind', id, '--to', '1', '--files', '--force'], cwd)
  expect(forced.status, forced.stderr).toBe(0)
  expect(forced.stdout).toMatch(/Overwrote your changes to: .*\.env/)
  expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('v1\n')
  expect(existsSync(join(cwd, '.env'))).toBe(false)
  expect(keel(['sessions', 'rewind', id, '--undo'], cwd).status).toBe(0)
  expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe('SECRET=hunter2\n')
})

test('snapshots are byte-exact whatever .gitattributes says: CRLF under text=auto, eol, ident, an encoding, a filter', () => {
  const utf16 = Buffer.from('\ufeffhello\r\n', 'utf16le')
  const cwd = project({
    '.gitattributes': [
      '* text=auto',
      '*.lf eol=lf',
      '*.crlf eol=crlf',
      '*.id ident',
      '*.u16 working-tree-encoding=UTF-16LE',
      '*.f filter=upper',
      '',
    ].join('\n'),
  })
  const files: Record<string, string | Buffer> = {
    'win.txt': 'line1\r\nline2\r\n',
    'mixed.lf': 'a\r\nb\n',
    'unix.crlf': 'a\nb\n',
    'stamp.id': '$Id: 0123456789abcdef0123456789abcdef01234567 $\n',
    'wide.u16': utf16,
    'data.f': 'lower\r\n',
  }
  for (const [name, content] of Object.entries(files)) writeFileSync(join(cwd, name), content)
  const before = Object.fromEntries(Object.keys(files).map((name) => [name, sha(join(cwd, name))]))
  turn(cwd, `for f in ${Object.keys(files).join(' ')}; do printf changed > "$f"; done`, true)
  const rewound = keel(['sessions', 'rewind', sessionId(cwd), '--to', '1', '--files'], cwd)
  expect(rewound.status, rewound.stderr).toBe(0)
  const after = Object.fromEntries(Object.keys(files).map((name) => [name, sha(join(cwd, name))]))
  expect(after).toEqual(before)
})

test('a nested repository is reported as left in place, never as deleted or overwritten', () => {
  const cwd = project({ 'app.txt': 'v1\n' })
  turn(
    cwd,
    'mkdir -p vendor/lib && cd vendor/lib && git init -q && echo x > lib.c && git add lib.c && git -c user.name=a -c user.email=a@a commit -qm lib && cd ../.. && echo v2 > app.txt',
    true,
  )
  // The person's uncommitted work inside it.
  writeFileSync(join(cwd, 'vendor/lib/mine.c'), 'my work\n')
  const id = sessionId(cwd)
  const rewound = keel(['sessions', 'rewind', id, '--to', '1', '--files'], cwd)
  expect(rewound.status, rewound.stderr).toBe(0)
  expect(rewound.stdout).not.toMatch(/delete\s+vendor\/lib/)
  expect(rewound.stdout).toContain('Files that change (1):\n  restore  app.txt\n')
  expect(rewound.stdout).toContain(
    'Left as they are (a git repository of their own, whose files Keel does not snapshot): vendor/lib',
  )
  expect(rewound.stdout).not.toContain('Overwrote')
  expect(readFileSync(join(cwd, 'vendor/lib/mine.c'), 'utf8')).toBe('my work\n')
  expect(readdirSync(join(cwd, 'vendor/lib')).sort()).toEqual(['.git', 'lib.c', 'mine.c'])
  expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('v1\n')
})
