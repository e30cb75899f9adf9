// The read-only list is an allowlist of options per command (src/readonly.ts). These tests hold it against the
// shell parser, against the class of options that write or run programs, and against a fixture of 6,462 real
// commands (tests/fixtures/README.md names where they come from): every one the list lets run unasked is run for
// real in a sandbox where nothing may change, and must neither write a file nor start a program off the list.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { analyzeCommand, isReadOnly, READ_ONLY_COMMANDS } from '@keel/permissions'
import { READ_THROUGH } from '../src/readonly.ts'
import { loadShellParser, parseCommand } from '../src/command.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'

await loadShellParser()

const ro = (command: string) => {
  const a = analyzeCommand(command)
  return a.ok && a.commands.length > 0 && a.commands.every(isReadOnly)
}

describe('the list, held against the shell parser', () => {
  const names = Object.keys(READ_ONLY_COMMANDS)
  it.each(names)('%s is a command word to the parser, and refuses an option it does not list', (name) => {
    const parsed = parseCommand(`${name} x`)
    expect(parsed).toMatchObject({ ok: true, commands: [{ words: [name, 'x'] }] })
    const spec = READ_ONLY_COMMANDS[name]!
    if (spec.plain) return
    const base = spec.sub ? `${name} ${Object.keys(spec.sub)[0]}` : name
    for (const option of ['--keel-not-an-option', '--keel-not-an-option=x', '-J9'])
      expect([base, option, ro(`${base} ${option} f`)]).toEqual([base, option, false])
  })

  it('the README names every command on the list', () => {
    const readme = readFileSync(join(import.meta.dirname, '../README.md'), 'utf8')
    const section = /\*\*Read-only commands\*\*([\s\S]*?)\n\n/.exec(readme)![1]!
    const listed = new Set([...section.matchAll(/`([^` ]+)`/g)].map((m) => m[1]!))
    expect(names.filter((name) => !listed.has(name))).toEqual([])
  })
})

describe('options that write or run another program', () => {
  const refused = [
    // sort: a compressor runs, -o writes, -T writes temporary files where it is told; abbreviations too.
    'sort -S 1k --compress-program=sh f',
    'sort --compress-program sh f',
    'sort --compress=sh f',
    'sort -T /tmp f',
    'sort -o out f',
    'sort -uo out f',
    'sort --output=out f',
    'sort --files0-from=list',
    // tree writes its listing (-o) or 00Tree.html (-R); file -C compiles a magic file, -z runs decompressors.
    'tree -o main.ts',
    'tree -fo listing.txt',
    'tree -R -H x',
    'file -C -m mymagic',
    'file --compile',
    'file -z x.gz',
    'file -p x',
    // find's actions; rg's preprocessor and decompressors.
    'find . -delete',
    'find . -exec rm {} +',
    'find . -exec sh -c x ;',
    'find . -fprint out',
    'find . -fprintf out %p',
    'find . -fls out',
    'find . -ok cat {} ;',
    'find -L . -newer x -fprint0 y',
    'rg --pre ./x p',
    'rg --pre=./x p',
    'rg -z p',
    'rg --search-zip p',
    'rg --pre-glob=x --pre ./x p',
    // git: writes, external programs, the repository's drivers, other subcommands.
    'git diff --output=x',
    'git log --output x',
    'git diff --ext-diff',
    'git diff --textconv',
    'git cat-file --textconv HEAD:x',
    'git log --show-signature',
    'git -c core.pager=x log',
    'git -p log',
    'git --exec-path=/x log',
    'git --git-dir=/x log',
    'git grep -O x',
    'git grep --open-files-in-pager=vi x',
    'git branch new',
    'git branch -D x',
    'git tag v1',
    'git tag -d v1',
    'git remote add o url',
    'git remote show origin',
    'git config user.name x',
    'git config --unset x',
    'git stash',
    'git stash pop',
    'git reflog expire --all',
    'git worktree add x',
    'git commit -m x',
    'git push',
    'git status --porcelain --keel',
    // sed writes in place or with w/W/s///w, runs with e or s///e, reads a script that could do either.
    'sed -i s/a/b/ f',
    'sed --in-place=.bak s/a/b/ f',
    "sed -n 's/a/b/w out' f",
    "sed 's/a/b/e' f",
    "sed '1e date' f",
    "sed -n '1w out' f",
    "sed 'W out' f",
    'sed -f script.sed f',
    "sed -e 1p -e 'w x' f",
    'sed $s f',
    // others
    'uniq in out',
    'date -s now',
    'date --set=now',
    'tail -f log',
    'tail -F log',
    'printf -v x y',
    'command rm x',
    'env FOO=1 ls',
    'env -i ls',
    'xargs rm',
    'xargs -I{} sh -c {}',
    'timeout 5 rm x',
    'nice rm x',
    'node -e 1',
    'node script.js',
    'python3 -c 1',
    'awk "{print}" f',
    'cd x y',
    'jq . $f',
    'ls > out',
    'cat a >> b',
    'FOO=1 cat x',
  ]
  it.each(refused)('%j asks', (command) => {
    expect(ro(command)).toBe(false)
  })
})

describe('the read-only commands models use run unasked', () => {
  const allowed = [
    'cd src && ls',
    'cd packages/cli && git status && ls -la',
    "sed -n '1,20p' f",
    'sed -n 1,20p f',
    "sed -n '/start/,/end/p' f",
    "sed 's/a/b/g' f",
    "sed -n '$=' f",
    'sed -e 1d -e 5q f',
    'git branch',
    'git branch -a',
    'git branch --show-current',
    'git branch -vv',
    'git remote -v',
    'git remote get-url origin',
    'git tag -l',
    'git tag',
    'git stash list',
    'git grep TODO',
    'git grep -n "a b" -- src',
    'git config --get user.name',
    'git config get user.email',
    'git --no-pager log --oneline -5',
    'git -C packages/cli diff --stat',
    'git log --pretty=format:%h --since=2.weeks',
    'git show HEAD~1 --stat',
    'git diff HEAD -- src',
    'git status -uno',
    'git rev-parse --show-toplevel',
    'git ls-files -m',
    'git blame -L 1,20 f',
    'jq . package.json',
    "jq -r '.scripts | keys[]' package.json",
    "jq --arg v 1 '.a == $v' f",
    'test -f x && echo yes',
    '[ -d src ] || echo no',
    'command -v node',
    'type -a git',
    'which node',
    'uname -a',
    'node --version',
    'python3 --version',
    'env',
    'printenv HOME',
    'uniq -c f',
    'sort -rn f | uniq -c | head',
    'sha256sum f',
    'readlink -f x',
    'realpath --relative-to=. x',
    'wc -l *.ts',
    'cat "$f"',
    'ls -la | head -20',
    'grep -rn foo . 2>/dev/null',
    'rg -n --hidden -g "*.ts" TODO src',
    "find . -name '*.ts' -not -path '*/node_modules/*' | head",
    'find . -name x -exec wc -l {} +',
    'find . -type f -mtime -7 -print0 | xargs -0 wc -l',
    'timeout 5 ls',
    'date +%s',
    'du -sh .',
    'stat -c %s f',
    'tree -L 2 -I node_modules',
    'file -b f',
    'diff -u a b',
    'nl -ba f',
    'cut -d: -f1 /etc/passwd',
    'echo "$HOME" | tr a-z A-Z',
    'sleep 1 && cat log',
  ]
  it.each(allowed)('%j runs without asking', (command) => {
    expect(ro(command)).toBe(true)
  })
})

const fixture = readFileSync(join(import.meta.dirname, 'fixtures/real-commands.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { source: string; command: string })

describe('the fixture of real commands', () => {
  const readOnly = fixture.filter(({ command }) => ro(command))

  it('holds thousands of commands, of which the list runs a few hundred unasked', () => {
    expect(fixture.length).toBeGreaterThan(5000)
    expect(readOnly.length).toBeGreaterThan(300)
  })

  const scratch = mkdtempSync(join(tmpdir(), 'keel-readonly-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  it.skipIf(skipWithout('bubblewrap', HAS_BWRAP, 'running the read-only fixture commands'))(
    'every command the list runs unasked, run for real, writes nothing and starts no program off the list',
    () => {
      const work = join(scratch, 'work')
      const marks = join(scratch, 'marks')
      const shims = join(scratch, 'bin')
      for (const dir of [work, marks, shims]) mkdirSync(dir, { recursive: true })
      // PATH holds the listed commands as themselves and every other program as a shim that records it ran.
      const shim = join(scratch, 'shim')
      writeFileSync(shim, `#!/bin/sh\necho "$(basename "$0") $*" >> ${marks}/ran\n`)
      chmodSync(shim, 0o755)
      const listed = new Set([...Object.keys(READ_ONLY_COMMANDS), ...READ_THROUGH])
      for (const dir of ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
        let entries: string[] = []
        try {
          entries = readdirSync(dir)
        } catch {}
        for (const name of entries) {
          try {
            symlinkSync(listed.has(name) ? join(dir, name) : shim, join(shims, name))
          } catch {}
        }
      }
      // A repository with a commit; the files the commands name are made before each runs.
      mkdirSync(join(work, 'path/to'), { recursive: true })
      writeFileSync(join(work, 'path/to/file.json'), '{"key1":"value1"}\n')
      mkdirSync(join(work, 'path/to/directory'), { recursive: true })
      const git = (...args: string[]) => spawnSync('git', args, { cwd: work, env: { ...process.env, HOME: work } })
      git('init', '-q')
      git('-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '.')
      git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'first')
      git('status')

      const problems: string[] = []
      let before = snapshot(work)
      for (const { source, command } of readOnly) {
        // The files a command names exist, each with unsorted content of its own, so a write shows.
        for (const part of (analyzeCommand(command) as { commands: { words: (string | null)[] }[] }).commands)
          for (const word of part.words) {
            if (!word || !/^path\/to\/[\w.-]+$/.test(word) || existsSync(join(work, word))) continue
            if (word.includes('dir')) mkdirSync(join(work, word))
            else writeFileSync(join(work, word), `${word}\nz\na\n`)
          }
        before = snapshot(work)
        const run = spawnSync(
          'bwrap',
          [
            ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'],
            ...['--bind', work, work, '--bind', marks, marks],
            ...['--unshare-all', '--die-with-parent', '--chdir', work],
            ...['--setenv', 'PATH', shims, '--setenv', 'HOME', work],
            ...['/bin/bash', '-c', command],
          ],
          { encoding: 'utf8', input: '', timeout: 1000, maxBuffer: 16 * 1024 * 1024 },
        )
        const after = snapshot(work)
        const ran = readMarks(marks)
        if (after !== before) problems.push(`${command} (${source}): changed the work tree`)
        if (/read-only file system/i.test(run.stderr ?? '')) problems.push(`${command} (${source}): tried to write`)
        if (ran) problems.push(`${command} (${source}): ran ${ran.trim()}`)
        before = after
      }
      expect(problems).toEqual([])
    },
    300_000,
  )
})

/** Every path under `dir` with its size and content hash (git's index aside, which git refreshes on its own). */
function snapshot(dir: string): string {
  const hash = createHash('sha256')
  const walk = (path: string) => {
    for (const name of readdirSync(path).sort()) {
      const full = join(path, name)
      if (full.endsWith('/.git/index')) continue
      const stat = statSync(full)
      hash.update(`${full}\0${stat.isDirectory() ? 'd' : stat.size}\0`)
      if (stat.isDirectory()) walk(full)
      else hash.update(readFileSync(full))
    }
  }
  walk(dir)
  return hash.digest('hex')
}

function readMarks(dir: string): string {
  const file = join(dir, 'ran')
  try {
    const text = readFileSync(file, 'utf8')
    rmSync(file)
    return text
  } catch {
    return ''
  }
}
