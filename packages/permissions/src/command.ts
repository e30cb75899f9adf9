// Splits a bash command into the simple commands it would run, with a real shell parser (mvdan-sh, the JS build
// of mvdan/sh), so rules judge every part of `a && b`, `a | b`, `$(…)`, backticks, subshells and redirections.
// Whatever the parser cannot turn into plain words is reported as such, and callers never allow it by a rule.
import { createRequire } from 'node:module'

/** One simple command: its words (null where a word is only known at run time) and where it writes. */
export interface SimpleCommand {
  words: (string | null)[]
  /** `FOO=bar cmd`: an assignment can change what the command does (PATH, GIT_EXTERNAL_DIFF, LD_PRELOAD…). */
  assigns: boolean
  /** Output redirections to something other than /dev/null or another descriptor (the target, or null if dynamic). */
  writes: (string | null)[]
}

export type CommandAnalysis =
  | { ok: true; commands: SimpleCommand[] }
  /**
   * The parser failed (no `commands`), or the command uses a construct we do not judge (if/for/while, functions…):
   * then `commands` still holds every simple command found inside it, for deny rules, which must see them.
   */
  | { ok: false; reason: string; commands?: SimpleCommand[] }

interface ShSyntax {
  NewParser(): { Parse(src: string, name: string): ShNode }
  NodeType(node: ShNode): string
  Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void
}
// mvdan-sh's AST is a GopherJS object graph; the fields we read are listed where they are used.
// biome-ignore lint/suspicious/noExplicitAny: an untyped foreign object graph; each read is checked where it happens
type ShNode = any

let syntax: ShSyntax | undefined
/**
 * Loads the parser (1.5 MB, so only when a command is first judged). The service awaits this dynamic import, which
 * the CLI bundle turns into a chunk of its own; a synchronous caller that comes first falls back to `require`.
 */
export async function loadShellParser(): Promise<void> {
  if (!syntax) syntax = (await import('mvdan-sh')).default.syntax as ShSyntax
}
function sh(): ShSyntax {
  if (!syntax) syntax = (createRequire(import.meta.url)('mvdan-sh') as { syntax: ShSyntax }).syntax
  return syntax
}

// Redirection operators by their token text; mvdan-sh numbers them, and the numbers are read once from the parser
// itself rather than hard-coded.
let redirectOps: Map<number, string> | undefined
function redirectOp(op: number): string {
  if (!redirectOps) {
    redirectOps = new Map()
    const parser = sh().NewParser()
    for (const text of ['>', '>>', '<', '<>', '<&', '>&', '>|', '<<', '<<-', '<<<', '&>', '&>>']) {
      const src = text.startsWith('<<') && text !== '<<<' ? `x ${text} E\nE\n` : `x ${text} y`
      const stmt = parser.Parse(src, 'op').Stmts[0]
      redirectOps.set(Number(stmt.Redirs[0].Op), text)
    }
  }
  return redirectOps.get(Number(op)) ?? '?'
}

const SAFE_TARGETS = new Set(['/dev/null', '/dev/stdout', '/dev/stderr'])

// A command of plain words (`ls -la src`, `git status`, `npm test -- --run`) is one simple command whatever the
// parser says, and the parser costs about 21 MB of resident memory once loaded: such a command is split here, and
// anything else goes to the parser. Plain means: words of letters, digits and `_ . / : , + @ % - =` only, separated
// by spaces or tabs; no quote, escape, `$`, glob, brace, tilde, comment, operator or redirection character; the first
// word no assignment (`=`) and not one of the words bash or mvdan-sh read as syntax (`time`, `if`, `export`…).
const PLAIN = /^[ \t]*[\w./:,+@%-]+(?:[ \t]+[\w./:,+@%=-]+)*[ \t]*$/
const SYNTAX_WORDS = new Set([
  'if',
  'then',
  'elif',
  'else',
  'fi',
  'case',
  'esac',
  'for',
  'select',
  'while',
  'until',
  'do',
  'done',
  'in',
  'function',
  'time',
  'coproc',
  'declare',
  'typeset',
  'local',
  'export',
  'readonly',
  'nameref',
  'let',
])

/** The words of a plain command, or undefined when the command needs the parser. */
function plainWords(command: string): string[] | undefined {
  if (!PLAIN.test(command)) return undefined
  const words = command.trim().split(/[ \t]+/)
  return SYNTAX_WORDS.has(words[0]!) ? undefined : words
}

/**
 * Whether judging `command` needs the shell parser: the permission service awaits `loadShellParser()` only then, so
 * a session of plain commands never loads it.
 */
export function needsShellParser(command: string): boolean {
  return plainWords(command) === undefined
}

/** Parses `command` into its simple commands, depth first, including those inside substitutions. */
export function analyzeCommand(command: string): CommandAnalysis {
  const plain = plainWords(command)
  if (plain) return { ok: true, commands: [{ words: plain, assigns: false, writes: [] }] }
  return parseCommand(command)
}

/** `analyzeCommand` through the parser, whatever the command (exported so tests can hold the two to the same answer). */
export function parseCommand(command: string): CommandAnalysis {
  let file: ShNode
  try {
    file = sh().NewParser().Parse(command, 'command')
  } catch (error) {
    const text =
      typeof (error as ShNode)?.Error === 'function'
        ? String((error as ShNode).Error())
        : String((error as Error)?.message ?? error)
    return { ok: false, reason: `the command does not parse: ${text}` }
  }
  const commands: SimpleCommand[] = []
  const walk: Walk = { unjudged: undefined }
  stmts(file.Stmts, commands, walk)
  return walk.unjudged ? { ok: false, reason: walk.unjudged, commands } : { ok: true, commands }
}

/** The first construct found that rules do not judge; the walk goes on into it so deny rules see what it runs. */
interface Walk {
  unjudged: string | undefined
}

function stmts(list: ShNode, out: SimpleCommand[], walk: Walk): void {
  for (const stmt of list ?? []) statement(stmt, out, walk)
}

function statement(stmt: ShNode, out: SimpleCommand[], walk: Walk): void {
  const writes: (string | null)[] = []
  for (const redirect of stmt.Redirs ?? []) {
    const op = redirectOp(redirect.Op)
    substitutions(redirect.Word, out, walk)
    if (redirect.Hdoc) substitutions(redirect.Hdoc, out, walk)
    if (op === '>' || op === '>>' || op === '>|' || op === '&>' || op === '&>>' || op === '<>') {
      const target = wordValue(redirect.Word)
      if (target === null || !SAFE_TARGETS.has(target)) writes.push(target)
    } else if (op === '>&' || op === '<&') {
      // `>&2` duplicates a descriptor; `>& file` (bash's synonym for &>) writes a file.
      const target = wordValue(redirect.Word)
      if (target === null || !/^(\d+|-)$/.test(target)) writes.push(target)
    }
  }
  const cmd = stmt.Cmd
  if (!cmd) {
    if (writes.length) out.push({ words: [], assigns: false, writes })
    return
  }
  const type = sh().NodeType(cmd)
  switch (type) {
    case 'CallExpr': {
      const words: (string | null)[] = []
      for (const assign of cmd.Assigns ?? []) {
        if (assign.Value) substitutions(assign.Value, out, walk)
        if (assign.Array || assign.Index) {
          walk.unjudged ??= 'the command assigns an array'
          inner(assign, out, walk)
        }
      }
      for (const word of cmd.Args ?? []) {
        substitutions(word, out, walk)
        words.push(wordValue(word))
      }
      out.push({ words, assigns: (cmd.Assigns ?? []).length > 0, writes })
      return
    }
    case 'BinaryCmd':
      // &&, ||, | and |& : both sides run.
      statement(cmd.X, out, walk)
      statement(cmd.Y, out, walk)
      break
    case 'Subshell':
    case 'Block':
      stmts(cmd.Stmts, out, walk)
      break
    case 'TimeClause':
      // The `time` keyword only measures the command it prefixes.
      if (cmd.Stmt) statement(cmd.Stmt, out, walk)
      break
    default:
      walk.unjudged ??= `the command uses ${describe(type)}, which rules do not judge`
      inner(cmd, out, walk)
  }
  // A redirection on a group applies to every command in it.
  if (writes.length) out.push({ words: [], assigns: false, writes })
}

function describe(type: string): string {
  const names: Record<string, string> = {
    IfClause: 'if',
    WhileClause: 'a while/until loop',
    ForClause: 'a for loop',
    CaseClause: 'case',
    FuncDecl: 'a function',
    DeclClause: 'declare/export/local',
    LetClause: 'let',
    TestClause: '[[ … ]]',
    ArithmCmd: '(( … ))',
    CoprocClause: 'coproc',
    TestDecl: 'a test declaration',
  }
  return names[type] ?? type
}

/** Every command substitution, process substitution and backtick inside a word runs: judge each as its own part. */
function substitutions(word: ShNode, out: SimpleCommand[], walk: Walk): void {
  if (!word) return
  const api = sh()
  api.Walk(word, (node) => {
    if (!node) return true
    const type = api.NodeType(node)
    if (type === 'CmdSubst' || type === 'ProcSubst') {
      stmts(node.Stmts, out, walk)
      return false
    }
    return true
  })
}

/** Every statement inside a construct that is not judged (a loop's body, a function's, an `if`'s branches). */
function inner(node: ShNode, out: SimpleCommand[], walk: Walk): void {
  const api = sh()
  api.Walk(node, (child) => {
    if (!child || child === node) return true
    if (api.NodeType(child) === 'Stmt') {
      statement(child, out, walk)
      return false
    }
    return true
  })
}

/**
 * The value of a word when it is fixed text (plain, quoted or escaped); null when part of it is only known at run
 * time (a parameter, a substitution, arithmetic, brace expansion, `$'…'`).
 */
function wordValue(word: ShNode): string | null {
  if (!word) return null
  let value = ''
  for (const part of word.Parts ?? []) {
    const type = sh().NodeType(part)
    if (type === 'Lit') {
      const raw = String(part.Value)
      // An unquoted * or ?, or [ with a ] after it, is a pattern the shell expands to file names: the word is not
      // known until run time. (`[` alone is the test command.)
      if (/(^|[^\\])(\\\\)*([*?]|\[.*\])/.test(raw)) return null
      value += unescapePlain(raw)
    } else if (type === 'SglQuoted') {
      if (part.Dollar) return null
      value += String(part.Value)
    } else if (type === 'DblQuoted') {
      if (part.Dollar) return null
      for (const inner of part.Parts ?? []) {
        if (sh().NodeType(inner) !== 'Lit') return null
        value += unescapeDouble(String(inner.Value))
      }
    } else return null
  }
  return value
}

function unescapePlain(text: string): string {
  return text.replace(/\\\n/g, '').replace(/\\(.)/gs, '$1')
}

function unescapeDouble(text: string): string {
  return text.replace(/\\\n/g, '').replace(/\\([$`"\\])/g, '$1')
}
