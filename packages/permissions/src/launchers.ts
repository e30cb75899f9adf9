// What a simple command runs besides itself. `env rm x`, `timeout 5 rm x`, `xargs rm`, `find -delete`,
// `bash -c 'rm x'` and `git -C . push` all run something a deny rule names; rules judge each of those too.
import { parseCommand, type SimpleCommand } from './command.ts'
import { type OptionSpec, parseOptions } from './options.ts'

/** The name a word runs as: `/bin/rm` and `\rm` are `rm` (quoting is gone by now). */
export function commandName(word: string | null | undefined): string | null {
  if (typeof word !== 'string') return null
  return word.includes('/') ? word.slice(word.lastIndexOf('/') + 1) : word
}

interface Launcher extends OptionSpec {
  /** Words between the options and the command (`timeout`'s duration). */
  skip?: number
  /** `env`: `NAME=value` words before the command set its environment. */
  assignments?: boolean
  /** Options after which the launcher runs nothing (`command -v`, `sudo -l`, `xargs --help`). */
  lookup?: readonly string[]
  /** What runs when no command is given (`xargs` runs `echo`). */
  otherwise?: string
}

// Options as the GNU coreutils, util-linux, sudo and findutils manuals list them.
const LAUNCHERS: Readonly<Record<string, Launcher>> = {
  env: {
    flags: 'i0v',
    values: 'uCS',
    long: ['ignore-environment', 'null', 'unset=', 'chdir=', 'split-string=', 'debug'],
    assignments: true,
    posix: true,
  },
  command: { flags: 'pvV', posix: true, lookup: ['-v', '-V'] },
  builtin: { posix: true },
  exec: { flags: 'cl', values: 'a', posix: true },
  nice: { values: 'n', long: ['adjustment='], numeric: true, posix: true },
  nohup: { posix: true },
  time: {
    flags: 'pvaq',
    values: 'fo',
    long: ['portability', 'verbose', 'append', 'quiet', 'format=', 'output='],
    posix: true,
  },
  timeout: {
    flags: 'v',
    values: 'sk',
    long: ['preserve-status', 'foreground', 'verbose', 'signal=', 'kill-after='],
    skip: 1,
    posix: true,
  },
  stdbuf: { values: 'ioe', long: ['input=', 'output=', 'error='], posix: true },
  setsid: { flags: 'cfw', long: ['ctty', 'fork', 'wait'], posix: true },
  ionice: { flags: 't', values: 'cn', long: ['class=', 'classdata=', 'ignore'], posix: true },
  chronic: { flags: 'ev', posix: true },
  unbuffer: { flags: 'p', posix: true },
  busybox: { posix: true },
  sudo: {
    flags: 'AbEHiKknPSsB',
    values: 'CDghpRrtTUu',
    long: [
      'askpass',
      'background',
      'bell',
      'preserve-env?',
      'set-home',
      'login',
      'remove-timestamp',
      'reset-timestamp',
      'non-interactive',
      'preserve-groups',
      'stdin',
      'shell',
      'close-from=',
      'chdir=',
      'group=',
      'host=',
      'prompt=',
      'chroot=',
      'role=',
      'type=',
      'command-timeout=',
      'other-user=',
      'user=',
    ],
    lookup: ['-l', '-V', '-v', '-h', '-K', '-k'],
    posix: true,
  },
  doas: { flags: 'ns', values: 'uC', posix: true },
  xargs: {
    // -e, -i and -l take a value only glued (`-i{}`): as bare flags they take none.
    flags: '0prtxeil',
    values: 'adEILnPs',
    long: [
      'null',
      'arg-file=',
      'delimiter=',
      'eof?',
      'replace?',
      'max-lines?',
      'max-args=',
      'max-procs=',
      'interactive',
      'process-slot-var=',
      'no-run-if-empty',
      'max-chars=',
      'show-limits',
      'verbose',
      'exit',
      'open-tty',
    ],
    otherwise: 'echo',
    posix: true,
  },
}

// Shells run their `-c` string; `bash script.sh` runs a file, which rules do not read.
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish'])
const SHELL: OptionSpec = {
  flags: 'abefhiklmnprstuvxBCEHPTc',
  values: 'oO',
  long: ['login', 'norc', 'noprofile', 'posix', 'restricted', 'verbose', 'noediting', 'rcfile=', 'init-file='],
  posix: true,
}

// git's options before the subcommand (git(1), OPTIONS).
const GIT: OptionSpec = {
  flags: 'pPv',
  values: 'Cc',
  long: [
    'no-pager',
    'paginate',
    'bare',
    'no-replace-objects',
    'no-lazy-fetch',
    'no-optional-locks',
    'no-advice',
    'literal-pathspecs',
    'glob-pathspecs',
    'noglob-pathspecs',
    'icase-pathspecs',
    'git-dir=',
    'work-tree=',
    'namespace=',
    'exec-path?',
    'super-prefix=',
    'config-env=',
    'attr-source=',
    'list-cmds=',
  ],
  posix: true,
}

// find(1): the actions that run or delete.
const FIND_RUNS = new Set(['-exec', '-execdir', '-ok', '-okdir'])

const UNKNOWN: SimpleCommand = { words: [null], assigns: false, writes: [] }
const MAX_DEPTH = 8

/**
 * Every command `command` runs, itself first: for a launcher the command it launches (and so on), for `find` what
 * its `-exec` runs (and `rm` for `-delete`), for `sh -c '…'` and `eval '…'` the commands of that text. A launch that
 * cannot be read (an unknown option, a command only known at run time) is a command whose name is null.
 */
export function launched(command: SimpleCommand, depth = 0): SimpleCommand[] {
  const out = [command]
  if (depth > MAX_DEPTH) return [...out, UNKNOWN]
  const [head, ...args] = command.words
  const name = commandName(head)
  const derive = (words: (string | null)[], assigns = command.assigns) =>
    out.push(...launched({ words, assigns, writes: command.writes }, depth + 1))

  if (name && Object.hasOwn(LAUNCHERS, name)) {
    const spec = LAUNCHERS[name]!
    const parsed = parseOptions(args, spec)
    if (!parsed) return [...out, UNKNOWN]
    if (parsed.options.some((o) => spec.lookup?.includes(o.name))) return out
    let rest = parsed.operands
    let assigns = command.assigns
    if (spec.assignments) {
      while (typeof rest[0] === 'string' && /^[A-Za-z_]\w*=/.test(rest[0])) {
        rest = rest.slice(1)
        assigns = true
      }
      const split = parsed.options.find((o) => o.name === '-S' || o.name === '--split-string')
      if (split) {
        if (typeof split.value !== 'string') return [...out, UNKNOWN]
        rest = [...split.value.trim().split(/\s+/), ...rest]
      }
    }
    rest = rest.slice(spec.skip ?? 0)
    if (!rest.length) {
      if (spec.otherwise) derive([spec.otherwise], assigns)
      return out
    }
    derive(rest, assigns)
    return out
  }
  if (name === 'eval') {
    text(args.length && args.every((a) => a !== null) ? args.join(' ') : null)
    return out
  }
  if (name && SHELLS.has(name)) {
    const parsed = parseOptions(args, SHELL)
    if (!parsed) return [...out, UNKNOWN]
    if (parsed.options.some((o) => o.name === '-c')) text(parsed.operands.length ? parsed.operands[0]! : null)
    return out
  }
  if (name === 'git') {
    const parsed = parseOptions(args, GIT)
    if (!parsed) return [...out, UNKNOWN]
    if (parsed.options.length) derive(['git', ...parsed.operands])
    return out
  }
  if (name === 'find') {
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '-delete') derive(['rm'])
      if (typeof args[i] === 'string' && FIND_RUNS.has(args[i]!)) {
        let end = i + 1
        while (end < args.length && args[end] !== ';' && args[end] !== '+') end++
        derive(args.slice(i + 1, end))
        i = end
      }
    }
  }
  return out

  /** The commands of a shell text (`sh -c`, `eval`): unknown when the text is. */
  function text(source: string | null): void {
    if (source === null) {
      out.push(UNKNOWN)
      return
    }
    const analysis = parseCommand(source)
    if (!analysis.commands) {
      out.push(UNKNOWN)
      return
    }
    for (const inner of analysis.commands) out.push(...launched(inner, depth + 1))
  }
}
