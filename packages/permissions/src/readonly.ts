// The short list of commands that only read, which `ask` mode runs in the sandbox without asking. Each entry says
// which options would make it write or run something else; a command with such an option is not on the list.
import type { SimpleCommand } from './command.ts'

type Check = (args: (string | null)[]) => boolean

const plain: Check = () => true
/** Every argument must be known text: a file-name pattern could expand to an option such as `-delete`. */
const literal =
  (test: (args: string[]) => boolean): Check =>
  (args) =>
    args.every((a) => a !== null) && test(args as string[])

const FIND_ACTIONS = /^-(exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$/
const GIT_READS = new Set(['status', 'log', 'diff', 'show', 'blame', 'rev-parse', 'ls-files', 'shortlog', 'describe'])
// Options that write a file or run a program of the caller's choosing.
const GIT_WRITES = /^(--output|--ext-diff|--textconv|-c$|--exec|--upload-pack|--config)/

export const READ_ONLY_COMMANDS: Readonly<Record<string, Check>> = {
  ls: plain,
  cat: plain,
  head: plain,
  tail: plain,
  wc: plain,
  pwd: plain,
  echo: plain,
  printf: literal((a) => !a.includes('-v')),
  grep: plain,
  egrep: plain,
  fgrep: plain,
  cut: plain,
  tr: plain,
  nl: plain,
  diff: plain,
  cmp: plain,
  basename: plain,
  dirname: plain,
  realpath: plain,
  which: plain,
  file: plain,
  stat: plain,
  du: plain,
  tree: plain,
  true: plain,
  false: plain,
  rg: literal((a) => !a.some((x) => /^--pre(=|$)/.test(x))),
  sort: literal((a) => !a.some((x) => /^(-o|--output)/.test(x) || /^-[a-zA-Z]*o/.test(x))),
  find: literal((a) => !a.some((x) => FIND_ACTIONS.test(x))),
  git: literal((a) => GIT_READS.has(a[0] ?? '') && !a.some((x) => GIT_WRITES.test(x))),
}

const XARGS_VALUE_FLAGS = new Set([
  '-n',
  '-L',
  '-P',
  '-d',
  '-I',
  '-s',
  '-E',
  '-a',
  '--max-args',
  '--max-lines',
  '--max-procs',
  '--delimiter',
  '--arg-file',
])

/** True when the simple command only reads: it is on the list, with no option that writes, no output redirection. */
export function isReadOnly(command: SimpleCommand): boolean {
  if (command.assigns || command.writes.length) return false
  return readOnlyWords(command.words)
}

function readOnlyWords(words: (string | null)[]): boolean {
  const [name, ...args] = words
  if (name === undefined) return true
  if (name === null) return false
  // `… | xargs wc -l`: xargs runs the command after its options, with input lines appended as arguments.
  if (name === 'xargs') {
    let i = 0
    while (i < args.length && typeof args[i] === 'string' && args[i]!.startsWith('-')) {
      i += XARGS_VALUE_FLAGS.has(args[i]!) ? 2 : 1
    }
    if (args.slice(0, i).some((a) => a === null)) return false
    return i < args.length && readOnlyWords(args.slice(i))
  }
  const check = Object.hasOwn(READ_ONLY_COMMANDS, name) ? READ_ONLY_COMMANDS[name] : undefined
  return check?.(args) === true
}
