// Plain commands are split without the shell parser (which costs about 21 MB once loaded): the split must be the
// parser's answer, and anything that is not plain must go to the parser.
import { describe, expect, it } from 'vitest'
import { analyzeCommand, needsShellParser, parseCommand } from '../src/command.ts'

describe('plain commands', () => {
  const plain = [
    'ls',
    'ls -la src',
    'git status',
    'git log --oneline -5',
    'npm test -- --run',
    'echo 0',
    '  echo\tspaced  out\t',
    'node --max-old-space-size=512 build.js',
    'env FOO=bar make',
    'git commit --author=a@b.c -m x',
    'rg -n TODO packages/cli/src',
    'curl https://example.com:8080/a,b+c%20d',
    'rm -rf dist',
    'eval ls',
    'exec ls',
    'ssh user@host uptime',
    'git push origin HEAD:main',
  ]
  it.each(plain)('%j is split as the parser splits it, without the parser', (command) => {
    expect(needsShellParser(command)).toBe(false)
    const parsed = parseCommand(command)
    expect(parsed.ok).toBe(true)
    expect(analyzeCommand(command)).toEqual(parsed)
  })

  const notPlain = [
    '',
    '   ',
    'FOO=bar make',
    'time ls',
    'export A=1',
    'declare -x A',
    'local a',
    'readonly a',
    'typeset a',
    'let a=1',
    'if true; then ls; fi',
    'for x in a; do echo $x; done',
    'while true; do ls; done',
    'function f { ls; }',
    'coproc ls',
    'select x in a; do ls; done',
    'echo "quoted"',
    "echo 'quoted'",
    'echo a\\ b',
    'echo $HOME',
    'echo `pwd`',
    'ls *.ts',
    'ls file?.ts',
    'ls [ab].ts',
    'echo {a,b}',
    'ls ~/x',
    'echo a # comment',
    '! ls',
    'ls; pwd',
    'ls && pwd',
    'ls | wc -l',
    'ls > out',
    'wc -l < in',
    '(ls)',
    'ls &',
    'ls\npwd',
    'ls\r',
    'echo é',
  ]
  it.each(notPlain)('%j goes to the parser', (command) => {
    expect(needsShellParser(command)).toBe(true)
    expect(analyzeCommand(command)).toEqual(parseCommand(command))
  })

  it('judges a syntax word in a later position as a plain argument, as the parser does', () => {
    expect(analyzeCommand('echo time if export')).toEqual({
      ok: true,
      commands: [{ words: ['echo', 'time', 'if', 'export'], assigns: false, writes: [] }],
    })
    expect(parseCommand('echo time if export')).toEqual(analyzeCommand('echo time if export'))
  })
})
