// How a wrapped command is spawned without the runtime's shells (src/argv.ts): the words are the ones the shell would
// have exec'd, and anything the runtime's quoting does not make is left to the shell.
import { describe, expect, test } from 'vitest'
// The runtime's own quoting; its package index does not export it.
import { quote as q } from '@anthropic-ai/sandbox-runtime/dist/utils/shell-quote.js'
import { directArgv, splitQuoted } from '../src/argv.ts'

const SECCOMP = '/opt/srt/vendor/seccomp/x64/apply-seccomp'
const BWRAP = ['/usr/bin/bwrap', '--ro-bind', '/', '/', '--bind', '/tmp/a b', '/tmp/a b', '--unsetenv', 'X']

describe('splitQuoted', () => {
  test.each([
    [['echo', 'hello']],
    [['a=b', "it's", '', "''", 'two words', 'line\nbreak', '$HOME `x` $(y) !z', '"dq"', '\\back', '*', '~', '=x']],
    [["'\"'\"'", "'", "''''"]],
  ])('gives back what the runtime quoted: %j', (args) => {
    expect(splitQuoted(q(args))).toEqual(args)
  })

  test.each(['echo $HOME', 'a  b', 'a ', 'echo "x"', "echo 'open", 'a;b', 'a|b', 'a > f', 'a\\ b', 'a\tb', ''])(
    'refuses what the runtime does not write: %j',
    (line) => {
      expect(splitQuoted(line)).toBeUndefined()
    },
  )
})

describe('directArgv', () => {
  const helper = (command: string, variable = 'SRT_ALLOW_NESTED_USERNS=0') =>
    `${variable} ${q([SECCOMP])} ${q(['/usr/bin/bash', '-c', command])}`

  test('bwrap itself, and inside it the seccomp helper with its variable set by bwrap', () => {
    const command = 'echo \'hi\' && cat "$f"'
    const argv = ['bash', '-c', q([...BWRAP, '--', '/usr/bin/bash', '-c', helper(command)])]
    expect(directArgv(argv)).toEqual([
      ...BWRAP,
      '--setenv',
      'SRT_ALLOW_NESTED_USERNS',
      '0',
      '--',
      SECCOMP,
      '/usr/bin/bash',
      '-c',
      command,
    ])
    const allowed = ['bash', '-c', q([...BWRAP, '--', '/usr/bin/bash', '-c', helper('x', 'SRT_ALLOW_NESTED_USERNS=1')])]
    expect(directArgv(allowed).slice(BWRAP.length, BWRAP.length + 4)).toEqual([
      '--setenv',
      'SRT_ALLOW_NESTED_USERNS',
      '1',
      '--',
    ])
  })

  test("the relays' script keeps its shell, without the one that only execs it", () => {
    const script = `{ socat A B; } &\n_srt_http=$!\n${helper('echo hi')}`
    const argv = ['bash', '-c', q([...BWRAP, '--', '/usr/bin/bash', '-c', q(['/usr/bin/bash', '-c', script])])]
    expect(directArgv(argv)).toEqual([...BWRAP, '--', '/usr/bin/bash', '-c', script])
  })

  test('a line the runtime wrote otherwise is left to its shell', () => {
    const inner = ['--', '/usr/bin/bash', '-c', helper('x')]
    for (const argv of [
      // Past the argument limit the runtime's line reads bwrap's arguments from a file.
      ['bash', '-c', `${q([...BWRAP, '--args', '3', ...inner])} 3< /tmp/profile`],
      ['bash', '-c', q(['bwrap', ...BWRAP.slice(1), ...inner])],
      ['bash', '-c', q(['/usr/bin/env', ...BWRAP.slice(1), ...inner])],
      ['bash', '-c', q(BWRAP)],
      ['bash', '-c', q([...BWRAP, '--', '/usr/bin/bash', '-c', 'x', 'extra'])],
      ['bash', '-x', q([...BWRAP, ...inner])],
      ['/usr/bin/bwrap', '--ro-bind', '/', '/'],
    ])
      expect(directArgv(argv)).toBe(argv)
  })

  test("a helper line of another shape keeps bwrap's shell", () => {
    for (const script of [
      `SRT_ALLOW_NESTED_USERNS=2 ${q([SECCOMP, '/usr/bin/bash', '-c', 'x'])}`,
      `OTHER=0 ${q([SECCOMP, '/usr/bin/bash', '-c', 'x'])}`,
      `SRT_ALLOW_NESTED_USERNS=0 ${q(['/usr/bin/true', '/usr/bin/bash', '-c', 'x'])}`,
      `SRT_ALLOW_NESTED_USERNS=0 ${q([SECCOMP, '/usr/bin/zsh', '-c', 'x'])}`,
      `SRT_ALLOW_NESTED_USERNS=0 ARGV0=x ${q([SECCOMP, '/usr/bin/bash', '-c', 'x'])}`,
      `SRT_ALLOW_NESTED_USERNS=0 ${q([SECCOMP, '/usr/bin/bash', '-c', 'x'])}; rm -rf /`,
    ]) {
      const argv = ['bash', '-c', q([...BWRAP, '--', '/usr/bin/bash', '-c', script])]
      expect(directArgv(argv)).toEqual([...BWRAP, '--', '/usr/bin/bash', '-c', script])
    }
  })
})
