// The runtime hands out `[shell, '-c', line]`, where `line` is a `bwrap` command line it quoted itself and the shell
// only splits and execs (a bash start of its own, about a tenth of a sandboxed call), and, for a command that can
// reach no host, bwrap's command is one more shell whose only job is to put one variable in front of the seccomp
// helper (another bash start). Both are undone here when, and only when, the line is exactly what the runtime's
// quoting makes, so the program bash would have exec'd runs with the same arguments and the same variable.

/** A word as the runtime's `quote` writes it: bare, `'…'`, and a quote in one as `'"'"'`; one space between words. */
const WORD = /^(?:[A-Za-z0-9_./:=@+,-]+|'[^']*'|"'")+/

/** The words `line` stands for, or undefined when it holds anything the runtime's quoting does not make. */
export function splitQuoted(line: string): string[] | undefined {
  const words: string[] = []
  let rest = line
  while (rest.length) {
    const match = WORD.exec(rest)
    if (!match) return undefined
    words.push(unquote(match[0]))
    rest = rest.slice(match[0].length)
    if (!rest.length) break
    if (rest[0] !== ' ' || rest.length === 1) return undefined
    rest = rest.slice(1)
  }
  return words.length ? words : undefined
}

function unquote(word: string): string {
  return word.replace(/'([^']*)'|"(')"/g, (_all, quoted: string | undefined, quote: string | undefined) =>
    quoted !== undefined ? quoted : quote!,
  )
}

/** The variable the runtime's shell puts in front of the seccomp helper (see `helperEnvironmentPrefix`). */
const HELPER_VARIABLE = /^SRT_ALLOW_NESTED_USERNS=([01])$/

/**
 * What to spawn for the runtime's `argv`: bwrap itself when the line is the runtime's quoting of a bwrap command,
 * and inside it the seccomp helper itself, its variable set by bwrap, when bwrap's command is the runtime's one-line
 * shell in front of it; the proxy relays' script keeps its one shell inside bwrap. A line past the argument limit
 * (it reads bwrap's arguments from a file), or one a runtime writes otherwise, is left as it is.
 */
export function directArgv(argv: readonly string[]): readonly string[] {
  if (argv.length !== 3 || argv[1] !== '-c') return argv
  const words = splitQuoted(argv[2]!)
  if (!words || !words[0]!.startsWith('/') || !words[0]!.endsWith('/bwrap')) return argv
  const end = words.indexOf('--')
  // bwrap's own options, then `-- <shell> -c <script>`, nothing after.
  if (end < 0 || end !== words.length - 4 || words[end + 2] !== '-c') return argv
  const shell = words[end + 1]!
  let script = words[end + 3]!
  // The relays' script comes as `<shell> -c <script>` inside bwrap's own shell, which only execs it.
  for (let inner = splitQuoted(script); inner?.length === 3 && inner[0] === shell && inner[1] === '-c'; )
    inner = splitQuoted((script = inner[2]!))
  const inner = splitQuoted(script)
  const variable = inner && HELPER_VARIABLE.exec(inner[0]!)
  if (
    !inner ||
    !variable ||
    inner.length !== 5 ||
    !inner[1]!.startsWith('/') ||
    !inner[1]!.endsWith('/apply-seccomp') ||
    inner[2] !== shell ||
    inner[3] !== '-c'
  )
    return [...words.slice(0, end + 3), script]
  // bwrap applies its environment options in order: after the runtime's `--unsetenv` of the same name, as its shell
  // set it after everything bwrap did.
  return [...words.slice(0, end), '--setenv', 'SRT_ALLOW_NESTED_USERNS', variable[1]!, '--', ...inner.slice(1)]
}
