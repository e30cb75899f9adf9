// A .gitignore's lines as git reads them (dir.c: add_patterns_from_buffer, parse_path_pattern) and its patterns as
// git matches them (wildmatch.c with WM_PATHNAME), compiled once to a test. The `ignore` library did this before, but
// its test of one path folds in its verdict on every parent directory, so a deeper .gitignore could not re-include
// a directory a shallower one ignores (`gen/`, then `!gen/` below), and the per-path test with its cache was most
// of a 20,000-file walk. tests/gitignore.test.ts holds these rules against `git ls-files` and ripgrep.

export interface GitignoreRule {
  /** `!pattern`: a match re-includes. */
  negative: boolean
  /** `pattern/`: matches directories only. */
  dirOnly: boolean
  /** No slash but a trailing one: matched against the entry's name alone, at any depth below the .gitignore. */
  basename: boolean
  /** The literal text before the first wildcard (relative to the .gitignore's directory), for a quick rejection. */
  literal: string
  /** Whether the pattern is all literal (`literal` is the whole of it). */
  exact: boolean
  /**
   * What the entry's own name must end with (`.map` for `*.map` in any directory), or be when the pattern's literal
   * end holds a slash (`c` for `a?/b/c`): tested on the name before a path rule's path is even put together.
   */
  nameEnd: string
  nameIsEnd: boolean
  /** Whether the pattern matches `subject`: the name for a basename rule, else the path below the .gitignore's dir. */
  test: (subject: string) => boolean
}

/** git's trim_trailing_spaces: trailing spaces go, unless escaped with a backslash. */
function trimTrailingSpaces(line: string): string {
  let lastSpace = -1
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (c === ' ') {
      if (lastSpace < 0) lastSpace = i
    } else {
      if (c === '\\' && ++i >= line.length) return line
      lastSpace = -1
    }
  }
  return lastSpace < 0 ? line : line.slice(0, lastSpace)
}

export interface Gitignore {
  /** In file order: the last one that matches a path decides. */
  rules: GitignoreRule[]
  /**
   * Whether ripgrep reads every line as git does. It does not for braces (`{a,b}` is an alternation to ripgrep),
   * POSIX classes, a backslash in a class, a `-` after a range (`[a-c-e]`), and trailing whitespace that is
   * escaped or not a space (ripgrep trims all of it); each was seen to differ from `git ls-files`.
   */
  ripgrepReadsAlike: boolean
}

/** The rules of a .gitignore's text. */
export function parseGitignore(text: string): Gitignore {
  const rules: GitignoreRule[] = []
  let ripgrepReadsAlike = true
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  for (const raw of body.split('\n')) {
    if (!raw || raw[0] === '#') continue
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    const trailing = /\s+$/.exec(line)?.[0]
    if (/[{}]/.test(line) || (trailing && (line.includes('\\') || /[^ ]/.test(trailing)))) ripgrepReadsAlike = false
    let pattern = trimTrailingSpaces(line)
    const negative = pattern[0] === '!'
    if (negative) pattern = pattern.slice(1)
    const dirOnly = pattern.endsWith('/')
    if (dirOnly) pattern = pattern.slice(0, -1)
    if (!pattern) continue
    const basename = !pattern.includes('/')
    // A leading slash only anchors the pattern to the .gitignore's directory, which a path below it always is.
    if (pattern[0] === '/') pattern = pattern.slice(1)
    const compiled = compile(pattern)
    if (!compiled.alike) ripgrepReadsAlike = false
    if (!compiled.test) continue
    const literal = /^[^*?[\\]*/.exec(pattern)![0]
    const end = /[^*?[\]\\]*$/.exec(pattern)![0]
    const slash = end.lastIndexOf('/')
    rules.push({
      negative,
      dirOnly,
      basename,
      literal,
      exact: literal === pattern,
      nameEnd: end.slice(slash + 1),
      nameIsEnd: slash >= 0,
      test: compiled.test,
    })
  }
  return { rules, ripgrepReadsAlike }
}

/** POSIX classes as git's ctype has them (ASCII only). */
const CLASSES: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  blank: ' \\t',
  cntrl: '\\x00-\\x1f\\x7f',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-/:-@\\[-`{-~',
  space: ' \\t\\n\\r',
  upper: 'A-Z',
  xdigit: '0-9A-Fa-f',
}

const escapeChar = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/**
 * `pattern` (no leading slash) as a test of a whole `/`-separated path, none for one git never matches (a trailing
 * backslash, an unclosed `[`, an unknown `[:class:]`), and whether its classes read alike in ripgrep. Plain names
 * and `*.ext` skip the regex.
 */
function compile(pattern: string): { test?: (subject: string) => boolean; alike: boolean } {
  if (!/[*?[\\]/.test(pattern)) return { test: (subject) => subject === pattern, alike: true }
  if (pattern[0] === '*' && !/[*?[\\/]/.test(pattern.slice(1))) {
    const suffix = pattern.slice(1)
    return { test: (subject) => subject.endsWith(suffix) && subject.indexOf('/') < 0, alike: true }
  }
  const never = { alike: false }
  let alike = true
  let out = ''
  const literal = /^[^*?[\\]*/.exec(pattern)![0]
  pattern = asBytes(pattern)
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === '\\') {
      if (++i >= pattern.length) return never
      out += escapeChar(pattern[i]!)
    } else if (c === '?') out += '[^/]'
    else if (c === '*') {
      let end = i
      while (pattern[end + 1] === '*') end++
      const double = end > i
      const before = i === 0 || pattern[i - 1] === '/'
      const next = pattern[end + 1]
      if (double && before && next === '/') {
        // `**/` matches no directory or any number of them.
        out += '(?:.*/)?'
        end++
      } else if (double && before && (next === undefined || (next === '\\' && pattern[end + 2] === '/'))) out += '.*'
      else out += '[^/]*'
      i = end
    } else if (c === '[') {
      const parsed = bracket(pattern, i)
      if (!parsed) return never
      out += parsed.regex
      alike &&= parsed.alike
      i = parsed.end
    } else out += escapeChar(c)
  }
  const regex = new RegExp(`^${out}$`, 's')
  // Most names fail on the literal start (`npm-debug.log*`), before any regex runs.
  return { test: (subject) => subject.startsWith(literal) && regex.test(asBytes(subject)), alike }
}

/** git (and ripgrep) match bytes: `?` or a class takes one byte of a UTF-8 name, not one character. */
const asBytes = (text: string) => (/[^\x00-\x7f]/.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text)

/** wildmatch's `[...]` from `pattern[start]`: its regex and the index of its `]`, or undefined when git aborts. */
function bracket(pattern: string, start: number): { regex: string; end: number; alike: boolean } | undefined {
  let p = start + 1
  const negated = pattern[p] === '!' || pattern[p] === '^'
  if (negated) p++
  const parts: string[] = []
  let prev: string | undefined
  let alike = true
  // As in wildmatch: the first character, even `]`, is a member; the class ends at the next `]`.
  for (let first = true; first || pattern[p] !== ']'; first = false, p++) {
    let c = pattern[p]
    if (c === undefined) return undefined
    if (c === '\\') {
      c = pattern[++p]
      if (c === undefined) return undefined
      parts.push(escapeChar(c))
      prev = c
      alike = false
    } else if (c === '-' && prev !== undefined && pattern[p + 1] !== undefined && pattern[p + 1] !== ']') {
      let to = pattern[++p]
      if (to === '\\') {
        to = pattern[++p]
        alike = false
      }
      if (to === undefined) return undefined
      parts.pop()
      // A reversed range matches nothing in git; JavaScript would refuse it.
      if (prev <= to) parts.push(`${escapeChar(prev)}-${escapeChar(to)}`)
      prev = undefined
    } else if (c === '[' && pattern[p + 1] === ':') {
      const close = pattern.indexOf(']', p + 2)
      if (close < 0) return undefined
      if (pattern[close - 1] !== ':' || close - 1 < p + 2) {
        // No `:]` before the `]`: a plain `[` member.
        parts.push(escapeChar('['))
        prev = '['
        alike = false
        continue
      }
      const members = CLASSES[pattern.slice(p + 2, close - 1)]
      if (members === undefined) return undefined
      parts.push(members)
      p = close
      prev = undefined
      alike = false
    } else {
      // A `-` after a range or a class is a member to git and a range to ripgrep.
      if (c === '-' && !first && pattern[p + 1] !== ']') alike = false
      parts.push(escapeChar(c))
      prev = c
    }
  }
  // With WM_PATHNAME no class matches a slash, negated or not.
  const set = parts.join('')
  return { regex: negated ? `[^/${set}]` : set ? `(?!/)[${set}]` : '(?!)', end: p, alike }
}
