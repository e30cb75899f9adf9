// The commands that only read, which `ask` mode runs in the sandbox without asking. Each is an allowlist: the
// options known to only read (from the tool's manual); any other option, long ones included, and the command asks.
// `tests/readonly.test.ts` holds every entry against the shell parser and the fixture of real commands.
import type { SimpleCommand } from './command.ts'
import { launched } from './launchers.ts'
import { has, type OptionSpec, type ParsedOptions, parseOptions } from './options.ts'

export interface ReadOnlySpec extends OptionSpec {
  /**
   * Operands may be words only known at run time (a glob, `$f`): true only for commands none of whose options writes
   * or runs anything, so that an expansion that turns into an option cannot do harm either.
   */
  expand?: boolean
  /** What the operands and options must also satisfy (`sed`'s script, `git branch` only listing). */
  check?: (parsed: ParsedOptions) => boolean
  /** The first operand names a subcommand with its own options (`git log`). */
  sub?: Readonly<Record<string, ReadOnlySpec>>
  /** Every argument is an operand, options included (`test -f x`, `find . -name x`): `check` judges them. */
  plain?: true
}

const none = (p: ParsedOptions) => p.operands.length === 0
const atMost = (n: number) => (p: ParsedOptions) => p.operands.length <= n

// sed(1): a script of commands that only print (`1,20p`, `/re/p`, `s/a/b/g`, `$=`); never `w`, `e`, `r`, `s///w`.
function sedScript(script: string | null | undefined): boolean {
  if (typeof script !== 'string') return false
  let i = 0
  const at = (re: RegExp) => {
    re.lastIndex = i
    const m = re.exec(script)
    if (!m) return false
    i += m[0].length
    return true
  }
  const delimited = (count: number): boolean => {
    const delim = script[i]
    if (!delim || delim === '\n' || delim === '\\') return false
    i++
    for (let n = 0; n < count; n++) {
      while (i < script.length && script[i] !== delim) {
        if (script[i] === '\n') return false
        i += script[i] === '\\' ? 2 : 1
      }
      if (script[i] !== delim) return false
      i++
    }
    return true
  }
  const address = (): boolean => {
    if (at(/\d+|\$/y)) return true
    if (script[i] === '/') return delimited(1) && (at(/[IM]*/y) || true)
    if (script[i] === '\\') {
      i++
      return delimited(1)
    }
    return false
  }
  while (i < script.length) {
    at(/[\s;]*/y)
    if (i >= script.length) break
    if (address()) {
      if (at(/~\d+/y)) {
      } else if (at(/\s*,\s*/y) && !at(/[+~]\d+/y) && !address()) return false
    }
    at(/\s*!?\s*/y)
    const command = script[i]
    if (command === undefined) return false
    i++
    if ('pPdDnNgGhHxz={}=F'.includes(command)) {
    } else if (command === 'q' || command === 'Q' || command === 'l') at(/\s*\d*/y)
    else if (command === 's') {
      if (!delimited(2) || !at(/[gpiImM\d]*/y)) return false
    } else if (command === 'y') {
      if (!delimited(2)) return false
    } else if (command === ':' || command === 'b' || command === 't' || command === 'T') at(/[^;\n}]*/y)
    else return false
    if (i < script.length && !/[\s;}]/.test(script[i]!)) return false
  }
  return true
}

const sed: ReadOnlySpec = {
  flags: 'nEsuzr',
  values: 'el',
  long: [
    'quiet',
    'silent',
    'regexp-extended',
    'separate',
    'unbuffered',
    'null-data',
    'posix',
    'debug',
    'sandbox',
    'expression=',
    'line-length=',
  ],
  check: (p) => {
    const scripts = p.options.filter((o) => o.name === '-e' || o.name === '--expression')
    if (scripts.length) return scripts.every((o) => sedScript(o.value))
    return p.operands.length > 0 && sedScript(p.operands[0])
  },
}

const grep: ReadOnlySpec = {
  flags: 'EFGPiyvwxcLloqsbHhnTZzuUaIrRVz',
  values: 'efmABCDd',
  numeric: true,
  long: [
    'extended-regexp',
    'fixed-strings',
    'basic-regexp',
    'perl-regexp',
    'regexp=',
    'file=',
    'ignore-case',
    'no-ignore-case',
    'word-regexp',
    'line-regexp',
    'no-messages',
    'invert-match',
    'version',
    'help',
    'max-count=',
    'byte-offset',
    'line-number',
    'no-line-number',
    'line-buffered',
    'with-filename',
    'no-filename',
    'label=',
    'only-matching',
    'quiet',
    'silent',
    'binary-files=',
    'text',
    'directories=',
    'devices=',
    'recursive',
    'dereference-recursive',
    'include=',
    'exclude=',
    'exclude-from=',
    'exclude-dir=',
    'files-without-match',
    'files-with-matches',
    'count',
    'initial-tab',
    'null',
    'null-data',
    'before-context=',
    'after-context=',
    'context=',
    'color?',
    'colour?',
    'binary',
  ],
  expand: true,
}

// rg(1) without --pre (runs a program per file) and -z (runs decompressors).
const rg: ReadOnlySpec = {
  flags: 'iIsSwxvlcoUnNHhFLqu0p.',
  values: 'eEgtTABCmMjrdf',
  numeric: false,
  long: [
    'regexp=',
    'file=',
    'after-context=',
    'before-context=',
    'context=',
    'case-sensitive',
    'ignore-case',
    'smart-case',
    'count',
    'count-matches',
    'files',
    'files-with-matches',
    'files-without-match',
    'fixed-strings',
    'follow',
    'glob=',
    'iglob=',
    'glob-case-insensitive',
    'heading',
    'no-heading',
    'hidden',
    'no-hidden',
    'invert-match',
    'json',
    'line-number',
    'no-line-number',
    'line-regexp',
    'max-columns=',
    'max-columns-preview',
    'max-count=',
    'max-depth=',
    'max-filesize=',
    'multiline',
    'multiline-dotall',
    'no-config',
    'no-ignore',
    'no-ignore-vcs',
    'no-ignore-dot',
    'no-ignore-exclude',
    'no-ignore-global',
    'no-ignore-parent',
    'no-ignore-files',
    'no-messages',
    'null',
    'null-data',
    'only-matching',
    'passthru',
    'pcre2',
    'engine=',
    'pretty',
    'quiet',
    'replace=',
    'sort=',
    'sortr=',
    'stats',
    'text',
    'trim',
    'type=',
    'type-not=',
    'type-list',
    'unrestricted',
    'vimgrep',
    'with-filename',
    'no-filename',
    'word-regexp',
    'column',
    'no-column',
    'color=',
    'colors=',
    'byte-offset',
    'crlf',
    'encoding=',
    'binary',
    'no-binary',
    'threads=',
    'path-separator=',
    'context-separator=',
    'field-match-separator=',
    'field-context-separator=',
    'debug',
    'version',
    'help',
  ],
}

const ls: ReadOnlySpec = {
  flags: 'aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1D',
  values: 'ITw',
  long: [
    'all',
    'almost-all',
    'author',
    'escape',
    'block-size=',
    'ignore-backups',
    'color?',
    'directory',
    'dired',
    'classify?',
    'file-type',
    'format=',
    'full-time',
    'group-directories-first',
    'no-group',
    'human-readable',
    'si',
    'dereference',
    'dereference-command-line',
    'dereference-command-line-symlink-to-dir',
    'hide=',
    'hyperlink?',
    'indicator-style=',
    'inode',
    'ignore=',
    'kibibytes',
    'literal',
    'numeric-uid-gid',
    'hide-control-chars',
    'show-control-chars',
    'quote-name',
    'quoting-style=',
    'reverse',
    'recursive',
    'size',
    'sort=',
    'time=',
    'time-style=',
    'tabsize=',
    'width=',
    'context',
    'zero',
    'help',
    'version',
  ],
  expand: true,
}

// git: the subcommands that read, each with the options its manual lists that only read.
const DIFF_OPTIONS = [
  'patch',
  'no-patch',
  'unified=',
  'raw',
  'patch-with-raw',
  'minimal',
  'patience',
  'histogram',
  'diff-algorithm=',
  'stat?',
  'compact-summary',
  'numstat',
  'shortstat',
  'dirstat?',
  'cumulative',
  'summary',
  'patch-with-stat',
  'name-only',
  'name-status',
  'submodule?',
  'color?',
  'no-color',
  'color-moved?',
  'no-color-moved',
  'word-diff?',
  'word-diff-regex=',
  'color-words?',
  'no-renames',
  'renames',
  'check',
  'full-index',
  'binary',
  'abbrev?',
  'break-rewrites?',
  'find-renames?',
  'find-copies?',
  'find-copies-harder',
  'irreversible-delete',
  'diff-filter=',
  'pickaxe-all',
  'pickaxe-regex',
  'skip-to=',
  'rotate-to=',
  'relative?',
  'no-relative',
  'text',
  'ignore-cr-at-eol',
  'ignore-space-at-eol',
  'ignore-space-change',
  'ignore-all-space',
  'ignore-blank-lines',
  'ignore-matching-lines=',
  'inter-hunk-context=',
  'function-context',
  'exit-code',
  'quiet',
  'no-ext-diff',
  'no-textconv',
  'ignore-submodules?',
  'src-prefix=',
  'dst-prefix=',
  'no-prefix',
  'default-prefix',
  'line-prefix=',
  'ita-invisible-in-index',
  'merge-base',
  'cached',
  'staged',
  'no-index',
  'indent-heuristic',
  'no-indent-heuristic',
  'anchored=',
  'output-indicator-new=',
  'output-indicator-old=',
  'output-indicator-context=',
]
const LOG_OPTIONS = [
  ...DIFF_OPTIONS,
  'oneline',
  'pretty?',
  'format=',
  'abbrev-commit',
  'no-abbrev-commit',
  'encoding=',
  'expand-tabs?',
  'no-expand-tabs',
  'notes?',
  'no-notes',
  'date=',
  'relative-date',
  'parents',
  'children',
  'left-right',
  'graph',
  'show-linear-break?',
  'decorate?',
  'no-decorate',
  'decorate-refs=',
  'decorate-refs-exclude=',
  'source',
  'mailmap',
  'no-mailmap',
  'use-mailmap',
  'full-diff',
  'log-size',
  'follow',
  'no-follow',
  'max-count=',
  'skip=',
  'since=',
  'after=',
  'since-as-filter=',
  'until=',
  'before=',
  'author=',
  'committer=',
  'grep-reflog=',
  'grep=',
  'all-match',
  'invert-grep',
  'regexp-ignore-case',
  'basic-regexp',
  'extended-regexp',
  'fixed-strings',
  'perl-regexp',
  'remove-empty',
  'merges',
  'no-merges',
  'min-parents=',
  'max-parents=',
  'no-min-parents',
  'no-max-parents',
  'first-parent',
  'exclude-first-parent-only',
  'not',
  'all',
  'branches?',
  'tags?',
  'remotes?',
  'glob=',
  'exclude=',
  'reflog',
  'alternate-refs',
  'single-worktree',
  'ignore-missing',
  'bisect',
  'stdin',
  'cherry-mark',
  'cherry-pick',
  'left-only',
  'right-only',
  'cherry',
  'walk-reflogs',
  'merge',
  'boundary',
  'simplify-by-decoration',
  'show-pulls',
  'full-history',
  'dense',
  'sparse',
  'simplify-merges',
  'ancestry-path?',
  'date-order',
  'author-date-order',
  'topo-order',
  'reverse',
  'no-walk?',
  'do-walk',
  'show-notes?',
  'standard-notes',
  'no-standard-notes',
  'diff-merges=',
  'no-diff-merges',
  'combined-all-paths',
  'dd',
  'remerge-diff',
  'count',
  'objects',
  'objects-edge',
  'no-object-names',
]
const DIFF_SHORT = { flags: 'pusRazwbBMCDW', values: 'USGOlI' }
const LOG: ReadOnlySpec = {
  flags: `${DIFF_SHORT.flags}imctrEFP`,
  values: 'nSGLI',
  numeric: true,
  long: LOG_OPTIONS,
}
const gitSub: Record<string, ReadOnlySpec> = {
  status: {
    flags: 'sbvz',
    optional: 'u',
    long: [
      'short',
      'branch',
      'show-stash',
      'porcelain?',
      'long',
      'verbose',
      'untracked-files?',
      'ignore-submodules?',
      'ignored?',
      'null',
      'column?',
      'no-column',
      'ahead-behind',
      'no-ahead-behind',
      'renames',
      'no-renames',
      'find-renames?',
    ],
  },
  log: LOG,
  show: LOG,
  shortlog: {
    ...LOG,
    flags: `${LOG.flags}sen`,
    values: 'SGLI',
    long: [...LOG_OPTIONS, 'numbered', 'summary', 'email', 'group='],
  },
  'rev-list': LOG,
  diff: { ...DIFF_SHORT, long: DIFF_OPTIONS },
  // The plumbing diffs never run an external diff or a textconv driver.
  'diff-files': { ...DIFF_SHORT, flags: `${DIFF_SHORT.flags}qr0123c`, long: DIFF_OPTIONS },
  'diff-index': { ...DIFF_SHORT, flags: `${DIFF_SHORT.flags}mr`, long: DIFF_OPTIONS },
  'diff-tree': {
    ...DIFF_SHORT,
    flags: `${DIFF_SHORT.flags}rtmcv`,
    long: [...DIFF_OPTIONS, 'root', 'stdin', 'always', 'no-commit-id'],
  },
  blame: {
    flags: 'bltfnspwe',
    optional: 'MC',
    values: 'LS',
    long: [
      'root',
      'show-stats',
      'show-name',
      'show-number',
      'show-email',
      'porcelain',
      'line-porcelain',
      'incremental',
      'encoding=',
      'contents=',
      'date=',
      'progress',
      'no-progress',
      'ignore-rev=',
      'ignore-revs-file=',
      'color-lines',
      'color-by-age',
      'minimal',
      'abbrev=',
    ],
  },
  'rev-parse': {
    flags: 'q',
    long: [
      'abbrev-ref?',
      'short?',
      'verify',
      'quiet',
      'sq',
      'not',
      'symbolic',
      'symbolic-full-name',
      'all',
      'branches?',
      'tags?',
      'remotes?',
      'glob=',
      'exclude=',
      'disambiguate=',
      'local-env-vars',
      'path-format=',
      'git-dir',
      'git-common-dir',
      'absolute-git-dir',
      'is-inside-git-dir',
      'is-inside-work-tree',
      'is-bare-repository',
      'is-shallow-repository',
      'resolve-git-dir=',
      'git-path=',
      'show-cdup',
      'show-prefix',
      'show-toplevel',
      'show-superproject-working-tree',
      'shared-index-path',
      'show-object-format?',
      'show-ref-format',
      'since=',
      'after=',
      'until=',
      'before=',
      'default=',
      'prefix=',
      'revs-only',
      'no-revs',
      'flags',
      'no-flags',
    ],
  },
  'ls-files': {
    flags: 'cdmoiskuvftz',
    values: 'xX',
    long: [
      'cached',
      'deleted',
      'modified',
      'others',
      'ignored',
      'stage',
      'directory',
      'no-empty-directory',
      'unmerged',
      'killed',
      'exclude=',
      'exclude-from=',
      'exclude-per-directory=',
      'exclude-standard',
      'error-unmatch',
      'with-tree=',
      'full-name',
      'recurse-submodules',
      'abbrev?',
      'debug',
      'eol',
      'deduplicate',
      'sparse',
      'format=',
    ],
  },
  'ls-tree': {
    flags: 'rtdlz',
    long: ['long', 'name-only', 'name-status', 'object-only', 'full-name', 'full-tree', 'abbrev?', 'format='],
  },
  describe: {
    long: [
      'all',
      'tags',
      'contains',
      'abbrev=',
      'candidates=',
      'exact-match',
      'debug',
      'long',
      'match=',
      'exclude=',
      'always',
      'first-parent',
      'dirty?',
      'broken?',
    ],
  },
  // `git grep -O` runs a pager of its caller's choosing.
  grep: {
    flags: 'aiIwvhHEGFPnlLzcopqWr',
    values: 'ABCefm',
    numeric: true,
    long: [
      'cached',
      'untracked',
      'no-index',
      'no-exclude-standard',
      'exclude-standard',
      'recurse-submodules',
      'text',
      'no-textconv',
      'ignore-case',
      'max-depth=',
      'recursive',
      'no-recursive',
      'word-regexp',
      'invert-match',
      'full-name',
      'extended-regexp',
      'basic-regexp',
      'perl-regexp',
      'fixed-strings',
      'line-number',
      'column',
      'files-with-matches',
      'name-only',
      'files-without-match',
      'null',
      'only-matching',
      'count',
      'color?',
      'no-color',
      'break',
      'heading',
      'show-function',
      'context=',
      'after-context=',
      'before-context=',
      'function-context',
      'max-count=',
      'threads=',
      'and',
      'or',
      'not',
      'all-match',
      'quiet',
    ],
  },
  // Lists only: with a name and no list option, `git branch x` creates a branch.
  branch: {
    flags: 'arlv',
    long: [
      'all',
      'remotes',
      'list',
      'verbose',
      'show-current',
      'contains?',
      'no-contains?',
      'merged?',
      'no-merged?',
      'points-at=',
      'sort=',
      'format=',
      'color?',
      'no-color',
      'column?',
      'no-column',
      'abbrev=',
      'no-abbrev',
      'ignore-case',
      'omit-empty',
    ],
    // git's builtin/branch.c lists when there is no name, or with one of these.
    check: (p) =>
      none(p) ||
      has(
        p,
        '-l',
        '--list',
        '-v',
        '--verbose',
        '--contains',
        '--no-contains',
        '--merged',
        '--no-merged',
        '--points-at',
      ),
  },
  tag: {
    flags: 'l',
    values: 'n',
    numeric: true,
    long: [
      'list',
      'sort=',
      'contains?',
      'no-contains?',
      'merged?',
      'no-merged?',
      'points-at=',
      'format=',
      'color?',
      'column?',
      'no-column',
      'ignore-case',
      'omit-empty',
    ],
    check: (p) =>
      none(p) || has(p, '-l', '--list', '-n', '--contains', '--no-contains', '--merged', '--no-merged', '--points-at'),
  },
  remote: {
    flags: 'v',
    long: ['verbose'],
    check: (p) => none(p) || (p.operands[0] === 'get-url' && p.operands.length <= 2),
  },
  stash: { ...LOG, check: (p) => p.operands[0] === 'list' || p.operands[0] === 'show' },
  // Reads a key (`--get`, `--list`, `git config get`); without one, `git config a b` sets a.
  config: {
    flags: 'lz',
    long: [
      'get',
      'get-all',
      'get-regexp',
      'get-urlmatch',
      'get-color',
      'get-colorbool',
      'list',
      'global',
      'system',
      'local',
      'worktree',
      'file=',
      'blob=',
      'show-origin',
      'show-scope',
      'name-only',
      'null',
      'type=',
      'bool',
      'int',
      'bool-or-int',
      'path',
      'expiry-date',
      'default=',
      'includes',
      'no-includes',
      'all',
      'regexp',
      'value=',
      'fixed-value',
      'url=',
    ],
    check: (p) =>
      (p.operands[0] === 'get' && p.operands.length <= 2) ||
      (p.operands[0] === 'list' && p.operands.length === 1) ||
      (has(p, '--get', '--get-all', '--get-regexp', '--get-urlmatch', '--list', '-l') && p.operands.length <= 2),
  },
  // Not --textconv or --filters, which run the drivers a repository's config names.
  'cat-file': { flags: 'tspe', long: ['use-mailmap', 'allow-unknown-type'], check: atMost(2) },
  'show-ref': {
    flags: 'dsq',
    long: ['head', 'branches', 'tags', 'dereference', 'hash?', 'abbrev?', 'verify', 'exists', 'quiet'],
  },
  'for-each-ref': {
    long: [
      'count=',
      'sort=',
      'format=',
      'color?',
      'shell',
      'perl',
      'python',
      'tcl',
      'points-at=',
      'merged?',
      'no-merged?',
      'contains?',
      'no-contains?',
      'ignore-case',
      'omit-empty',
      'exclude=',
    ],
  },
  'merge-base': { flags: 'a', long: ['all', 'octopus', 'independent', 'is-ancestor', 'fork-point'] },
  reflog: { ...LOG, check: (p) => !['expire', 'delete', 'drop', 'write'].includes(p.operands[0] ?? '') },
  worktree: { long: ['porcelain', 'verbose', 'expire='], flags: 'vz', check: (p) => p.operands[0] === 'list' },
  version: { long: ['build-options'] },
  'count-objects': { flags: 'vH', long: ['verbose', 'human-readable'], check: none },
  'check-ignore': { flags: 'qvnz', long: ['quiet', 'verbose', 'non-matching', 'no-index', 'stdin'] },
  'name-rev': { long: ['tags', 'refs=', 'exclude=', 'all', 'annotate-stdin', 'name-only', 'no-undefined', 'always'] },
}

const versionOnly: ReadOnlySpec = {
  flags: 'vV',
  long: ['version'],
  check: (p) => p.options.length === 1 && none(p),
}

export const READ_ONLY_COMMANDS: Readonly<Record<string, ReadOnlySpec>> = {
  ls,
  cat: {
    flags: 'AbeEnstTuv',
    long: ['show-all', 'number-nonblank', 'show-ends', 'number', 'squeeze-blank', 'show-tabs', 'show-nonprinting'],
    expand: true,
  },
  head: {
    flags: 'qvz',
    values: 'cn',
    numeric: true,
    long: ['bytes=', 'lines=', 'quiet', 'silent', 'verbose', 'zero-terminated'],
    expand: true,
  },
  // Without -f/-F: following a file never ends.
  tail: {
    flags: 'qvz',
    values: 'cn',
    numeric: true,
    long: ['bytes=', 'lines=', 'quiet', 'silent', 'verbose', 'zero-terminated'],
    expand: true,
  },
  wc: {
    flags: 'cmlLw',
    long: ['bytes', 'chars', 'lines', 'max-line-length', 'words', 'total=', 'files0-from='],
    expand: true,
  },
  pwd: { flags: 'LP', check: none },
  cd: { flags: 'LPe@', check: atMost(1), expand: true },
  // echo, printf and test take any word as text; not `printf -v`, which assigns a variable of the shell.
  echo: { plain: true, expand: true },
  printf: { plain: true, expand: true, check: (p) => p.operands.length > 0 && !p.operands[0]!.startsWith('-v') },
  true: {},
  false: {},
  test: { plain: true, expand: true },
  '[': { plain: true, expand: true, check: (p) => p.operands[p.operands.length - 1] === ']' },
  sleep: { check: (p) => p.operands.length > 0 && p.operands.every((o) => /^\d+(\.\d+)?[smhd]?$/.test(o ?? '')) },
  sed,
  grep,
  egrep: grep,
  fgrep: grep,
  rg,
  find: { plain: true, check: (p) => findReads(p.operands) },
  sort: {
    flags: 'bdfgiMhnRrVcCmsuz',
    values: 'ktS',
    long: [
      'ignore-leading-blanks',
      'dictionary-order',
      'ignore-case',
      'general-numeric-sort',
      'ignore-nonprinting',
      'month-sort',
      'human-numeric-sort',
      'numeric-sort',
      'random-sort',
      'reverse',
      'sort=',
      'version-sort',
      'check?',
      'merge',
      'stable',
      'unique',
      'zero-terminated',
      'key=',
      'field-separator=',
      'buffer-size=',
      'parallel=',
      'debug',
    ],
  },
  uniq: {
    flags: 'cdDiuz',
    values: 'fsw',
    long: [
      'count',
      'repeated',
      'all-repeated?',
      'group?',
      'ignore-case',
      'unique',
      'zero-terminated',
      'skip-fields=',
      'skip-chars=',
      'check-chars=',
    ],
    // `uniq in out` writes out.
    check: atMost(1),
  },
  cut: {
    flags: 'nsz',
    values: 'bcdf',
    long: [
      'bytes=',
      'characters=',
      'delimiter=',
      'fields=',
      'complement',
      'only-delimited',
      'output-delimiter=',
      'zero-terminated',
    ],
    expand: true,
  },
  tr: { flags: 'cCdst', long: ['complement', 'delete', 'squeeze-repeats', 'truncate-set1'], expand: true },
  nl: {
    flags: 'p',
    values: 'bdfhilnsvw',
    long: [
      'body-numbering=',
      'section-delimiter=',
      'footer-numbering=',
      'header-numbering=',
      'line-increment=',
      'join-blank-lines=',
      'number-format=',
      'no-renumber',
      'number-separator=',
      'starting-line-number=',
      'number-width=',
    ],
    expand: true,
  },
  diff: {
    flags: 'iEZbwBaTtlrNsqucydpyP',
    values: 'CUFIxXW',
    numeric: true,
    long: [
      'normal',
      'brief',
      'report-identical-files',
      'context?',
      'unified?',
      'ed',
      'rcs',
      'side-by-side',
      'width=',
      'left-column',
      'suppress-common-lines',
      'show-c-function',
      'show-function-line=',
      'label=',
      'expand-tabs',
      'initial-tab',
      'tabsize=',
      'suppress-blank-empty',
      'new-file',
      'unidirectional-new-file',
      'ignore-case',
      'ignore-tab-expansion',
      'ignore-trailing-space',
      'ignore-space-change',
      'ignore-all-space',
      'ignore-blank-lines',
      'ignore-matching-lines=',
      'text',
      'strip-trailing-cr',
      'recursive',
      'no-dereference',
      'exclude=',
      'exclude-from=',
      'starting-file=',
      'from-file=',
      'to-file=',
      'ignore-file-name-case',
      'no-ignore-file-name-case',
      'minimal',
      'speed-large-files',
      'horizon-lines=',
      'color?',
      'palette=',
      'help',
      'version',
    ],
    expand: true,
  },
  cmp: {
    flags: 'blsz',
    values: 'in',
    long: ['print-bytes', 'ignore-initial=', 'verbose', 'bytes=', 'quiet', 'silent', 'zero-terminated'],
    expand: true,
  },
  basename: { flags: 'az', values: 's', long: ['multiple', 'suffix=', 'zero'], expand: true },
  dirname: { flags: 'z', long: ['zero'], expand: true },
  realpath: {
    flags: 'emLPqsz',
    long: [
      'canonicalize-existing',
      'canonicalize-missing',
      'logical',
      'physical',
      'quiet',
      'relative-to=',
      'relative-base=',
      'strip',
      'no-symlinks',
      'zero',
    ],
    expand: true,
  },
  readlink: {
    flags: 'femnqsvz',
    long: [
      'canonicalize',
      'canonicalize-existing',
      'canonicalize-missing',
      'no-newline',
      'quiet',
      'silent',
      'verbose',
      'zero',
    ],
    expand: true,
  },
  which: { flags: 'as', expand: true },
  type: { flags: 'afptP', expand: true },
  // Without -C/--compile (writes a magic file), -z/-Z (runs decompressors), -p (sets the files' times back).
  file: {
    flags: 'bchiIkLlNnrsS0E',
    values: 'eFfmP',
    long: [
      'brief',
      'checking-printout',
      'dereference',
      'no-dereference',
      'mime',
      'mime-type',
      'mime-encoding',
      'keep-going',
      'list',
      'no-buffer',
      'no-pad',
      'raw',
      'special-files',
      'print0',
      'extension',
      'apple',
      'exclude=',
      'exclude-quiet=',
      'files-from=',
      'separator=',
      'magic-file=',
      'parameter=',
    ],
  },
  stat: {
    flags: 'fLt',
    values: 'c',
    long: ['dereference', 'file-system', 'format=', 'printf=', 'terse', 'cached='],
  },
  du: {
    flags: 'abcDhHklLmPsSx0',
    values: 'dBtX',
    long: [
      'null',
      'all',
      'apparent-size',
      'block-size=',
      'bytes',
      'total',
      'dereference-args',
      'max-depth=',
      'files0-from=',
      'human-readable',
      'inodes',
      'dereference',
      'count-links',
      'no-dereference',
      'separate-dirs',
      'si',
      'summarize',
      'threshold=',
      'time?',
      'time-style=',
      'exclude-from=',
      'exclude=',
      'one-file-system',
    ],
    expand: true,
  },
  // Without -o (writes its listing to a file) and -R (writes 00Tree.html in every folder).
  tree: {
    flags: 'adlfixqNQpugshDFvtcUrnCASJX',
    values: 'LPIH',
    long: [
      'noreport',
      'charset=',
      'filelimit=',
      'timefmt=',
      'gitignore',
      'ignore-case',
      'matchdirs',
      'prune',
      'info',
      'dirsfirst',
      'filesfirst',
      'sort=',
      'du',
      'si',
      'inodes',
      'device',
      'fromfile',
      'noindent',
      'metafirst',
      'hintro=',
      'houtro=',
      'nolinks',
      'hyperlink',
      'scheme=',
      'authority=',
      'version',
      'help',
    ],
  },
  sha1sum: {
    flags: 'bctwz',
    long: ['binary', 'check', 'tag', 'text', 'zero', 'ignore-missing', 'quiet', 'status', 'strict', 'warn'],
    expand: true,
  },
  sha256sum: {
    flags: 'bctwz',
    long: ['binary', 'check', 'tag', 'text', 'zero', 'ignore-missing', 'quiet', 'status', 'strict', 'warn'],
    expand: true,
  },
  sha512sum: {
    flags: 'bctwz',
    long: ['binary', 'check', 'tag', 'text', 'zero', 'ignore-missing', 'quiet', 'status', 'strict', 'warn'],
    expand: true,
  },
  md5sum: {
    flags: 'bctwz',
    long: ['binary', 'check', 'tag', 'text', 'zero', 'ignore-missing', 'quiet', 'status', 'strict', 'warn'],
    expand: true,
  },
  cksum: {
    flags: 'rz',
    values: 'al',
    long: ['algorithm=', 'length=', 'raw', 'tag', 'untagged', 'zero', 'check', 'base64'],
    expand: true,
  },
  // jq has no way to write a file or run a program; -f/--from-file and the *file options read.
  jq: {
    flags: 'rjacnesSCMR0',
    values: 'fL',
    long: [
      'raw-output',
      'raw-output0',
      'join-output',
      'ascii-output',
      'compact-output',
      'null-input',
      'exit-status',
      'slurp',
      'sort-keys',
      'color-output',
      'monochrome-output',
      'raw-input',
      'tab',
      'indent=',
      'stream',
      'stream-errors',
      'seq',
      'from-file=',
      'arg==',
      'argjson==',
      'slurpfile==',
      'rawfile==',
      'args',
      'jsonargs',
      'unbuffered',
      'version',
      'help',
      'build-configuration',
    ],
    check: (p) => p.operands.every((o) => o !== null),
  },
  uname: {
    flags: 'asnrvmpio',
    long: [
      'all',
      'kernel-name',
      'nodename',
      'kernel-release',
      'kernel-version',
      'machine',
      'processor',
      'hardware-platform',
      'operating-system',
    ],
    check: none,
  },
  whoami: { check: none },
  id: { flags: 'agGnruzZ', long: ['context', 'group', 'groups', 'name', 'real', 'user', 'zero'], expand: true },
  nproc: { long: ['all', 'ignore='], check: none },
  // Not -s/--set, which sets the clock.
  date: {
    flags: 'uRI',
    values: 'drf',
    long: [
      'date=',
      'debug',
      'file=',
      'iso-8601?',
      'resolution',
      'rfc-email',
      'rfc-3339=',
      'reference=',
      'utc',
      'universal',
    ],
    check: (p) => p.operands.length <= 1 && p.operands.every((o) => typeof o === 'string' && o.startsWith('+')),
  },
  // Bare `env` prints the environment; with a command it is a launcher.
  env: { check: none },
  printenv: { flags: '0', long: ['null'], expand: true },
  // `command -v x` looks a name up; `command x` runs x (judged as x).
  command: { flags: 'pvV', posix: true, expand: true, check: (p) => has(p, '-v', '-V') },
  node: versionOnly,
  python3: versionOnly,
  python: versionOnly,
  git: { sub: gitSub },
}

// git's options before the subcommand that only change where it reads or how it prints: not -c, --git-dir,
// --work-tree, --exec-path or -p (which forces the pager a repository's config names).
const GIT_GLOBALS: OptionSpec = {
  flags: 'P',
  values: 'C',
  long: [
    'no-pager',
    'no-optional-locks',
    'no-advice',
    'no-lazy-fetch',
    'no-replace-objects',
    'literal-pathspecs',
    'glob-pathspecs',
    'noglob-pathspecs',
    'icase-pathspecs',
    'version',
  ],
  posix: true,
}

// find(1): the tests and the actions that only print; -exec, -delete, -fprint* and -fls are not among them.
const FIND_PRIMARIES = new Set(
  [
    'name iname path ipath wholename iwholename regex iregex lname ilname type xtype size empty',
    'mtime mmin atime amin ctime cmin used newer anewer cnewer user group uid gid nouser nogroup perm links inum',
    'samefile readable writable executable fstype context maxdepth mindepth depth follow xdev mount noleaf',
    'daystart regextype ignore_readdir_race noignore_readdir_race warn nowarn',
    'not a o and or true false prune quit print print0 printf ls',
    'L H P O0 O1 O2 O3 D',
  ]
    .join(' ')
    .split(' ')
    .map((p) => `-${p}`),
)
function findReads(args: (string | null)[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const word = args[i]
    if (word === null) return false
    // `-exec wc -l {} +` runs a command: it must be one on this list.
    if (word === '-exec' || word === '-execdir') {
      let end = i + 1
      while (end < args.length && args[end] !== ';' && args[end] !== '+') end++
      if (end >= args.length || !readOnlyWords(args.slice(i + 1, end), 1)) return false
      i = end
      continue
    }
    if (!word.startsWith('-') || word === '-') continue
    if (FIND_PRIMARIES.has(word) || /^-newer[aBcmt][aBcmt]?$/.test(word)) continue
    // A value such as `-mtime -7` or `-perm -644`.
    if (/^-\d+[a-zA-Z]?$/.test(word)) continue
    return false
  }
  return true
}

/** True when the simple command only reads: it is on the list, with no option that writes, no output redirection. */
export function isReadOnly(command: SimpleCommand): boolean {
  if (command.assigns || command.writes.length) return false
  return readOnlyWords(command.words, 0)
}

// The launchers that only change how a command runs (not what it may touch), with their options from LAUNCHERS.
export const READ_THROUGH: ReadonlySet<string> = new Set(['command', 'builtin', 'nice', 'timeout', 'xargs', 'stdbuf'])

function readOnlyWords(words: (string | null)[], depth: number): boolean {
  const [head, ...args] = words
  if (head === undefined) return true
  if (head === null || head.includes('/') || depth > 4) return false
  const spec = Object.hasOwn(READ_ONLY_COMMANDS, head) ? READ_ONLY_COMMANDS[head] : undefined
  if (head === 'git') {
    const globals = parseOptions(args, GIT_GLOBALS)
    if (!globals || globals.operands.some((o) => o === null)) return false
    if (has(globals, '--version')) return globals.operands.length === 0
    return judge(globals.operands, READ_ONLY_COMMANDS.git!)
  }
  if (spec && judge(args, spec)) return true
  // `xargs wc -l`, `timeout 5 rg x`, `command ls`: the launcher's options are read, then the command it runs.
  if (READ_THROUGH.has(head)) {
    const [self, next] = launched({ words, assigns: false, writes: [] })
    if (!next || !self || next.words[0] === null || next.assigns) return false
    return readOnlyWords(next.words, depth + 1)
  }
  return false
}

function judge(args: (string | null)[], spec: ReadOnlySpec): boolean {
  if (spec.sub) {
    const [sub, ...rest] = args
    if (typeof sub !== 'string' || !Object.hasOwn(spec.sub, sub)) return false
    return judge(rest, spec.sub[sub]!)
  }
  if (!spec.expand && args.some((a) => a === null)) return false
  // In an `expand` command an expansion is an operand, or an option of a command none of whose options does harm.
  const known = spec.expand ? args.map((a) => a ?? '') : args
  const parsed = spec.plain ? { options: [], operands: known } : parseOptions(known, spec)
  if (!parsed) return false
  return spec.check ? spec.check(parsed) : true
}
