// Permission rules: `tool` (every call), `tool(specifier)`, and `mcp__server__*` (every tool of a server).
// For a command tool the specifier is a command: `bash(git status)` exact, `bash(npm test:*)` a word prefix.
// For a file tool it is a glob relative to the working directory (`edit(src/**)`), or absolute (`write(/tmp/*)`).
import { homedir } from 'node:os'
import { isAbsolute, relative, sep } from 'node:path'
import picomatch from 'picomatch'
import { analyzeCommand, type SimpleCommand } from './command.ts'
import { commandName, launched } from './launchers.ts'
import type { ToolAccess } from './types.ts'

export type Rule =
  | { text: string; tool: string; kind: 'tool' }
  | { text: string; tool: string; kind: 'tool-prefix' }
  | { text: string; tool: string; kind: 'command'; words: string[]; prefix: boolean }
  /** A specifier that is not one plain command (`bash(a && b)`): matches that exact command text only. */
  | { text: string; tool: string; kind: 'command-text'; command: string }
  | { text: string; tool: string; kind: 'path'; glob: string; absolute: boolean; match: (path: string) => boolean }

const RULE = /^([A-Za-z0-9_.-]+\*?)(?:\((.*)\))?$/s

/** Parses one rule; a string says what is wrong with it. */
export function parseRule(text: string): Rule | string {
  const trimmed = text.trim()
  const m = RULE.exec(trimmed)
  if (!m) return `not a rule: ${JSON.stringify(text)} (expected tool, tool(specifier) or mcp__server__*)`
  const tool = m[1]!
  const spec = m[2]
  if (tool.endsWith('*')) {
    if (spec !== undefined) return `${JSON.stringify(text)}: a name pattern takes no (specifier)`
    return { text: trimmed, tool: tool.slice(0, -1), kind: 'tool-prefix' }
  }
  if (spec === undefined || spec.trim() === '' || spec.trim() === '*' || spec.trim() === ':*')
    return { text: trimmed, tool, kind: 'tool' }
  if (tool === 'bash') return commandRule(trimmed, tool, spec.trim())
  const glob = spec.trim().replace(/^~(?=\/)/, homedir())
  const absolute = isAbsolute(glob)
  return { text: trimmed, tool, kind: 'path', glob, absolute, match: picomatch(glob, { dot: true }) }
}

function commandRule(text: string, tool: string, spec: string): Rule | string {
  const prefix = spec.endsWith(':*')
  const body = prefix ? spec.slice(0, -2).trim() : spec
  const parsed = analyzeCommand(body)
  const single = parsed.ok && parsed.commands.length === 1 ? parsed.commands[0]! : undefined
  if (
    single &&
    !single.assigns &&
    !single.writes.length &&
    single.words.length &&
    single.words.every((w) => w !== null)
  ) {
    return { text, tool, kind: 'command', words: single.words as string[], prefix }
  }
  if (prefix) return `${JSON.stringify(text)}: a prefix rule must be plain words, like bash(npm test:*)`
  return { text, tool, kind: 'command-text', command: body }
}

/** Rules from settings; bad ones are reported, not fatal (one line each). */
export function parseRules(texts: readonly string[]): { rules: Rule[]; problems: string[] } {
  const rules: Rule[] = []
  const problems: string[] = []
  for (const text of texts) {
    const rule = parseRule(text)
    if (typeof rule === 'string') problems.push(rule)
    else rules.push(rule)
  }
  return { rules, problems }
}

function nameMatches(rule: Rule, tool: string): boolean {
  return rule.kind === 'tool-prefix' ? tool.startsWith(rule.tool) : rule.tool === tool
}

/** A rule that applies to the whole call, whatever its arguments. */
export function matchesWholeTool(rule: Rule, tool: string): boolean {
  return (rule.kind === 'tool' || rule.kind === 'tool-prefix') && nameMatches(rule, tool)
}

/** Does a command rule match this simple command? Every word the rule names must be known text. */
export function matchesCommand(rule: Rule, command: SimpleCommand): boolean {
  if (rule.kind !== 'command') return false
  const { words } = command
  if (command.assigns || command.writes.length) return false
  if (rule.prefix ? words.length < rule.words.length : words.length !== rule.words.length) return false
  return rule.words.every((word, i) => words[i] === word)
}

/** Does a path rule match this absolute path? Relative globs only ever match inside `cwd`. */
export function matchesPath(rule: Rule, path: string, cwd: string): boolean {
  if (rule.kind !== 'path') return false
  if (rule.absolute) return rule.match(path)
  const rel = relative(cwd, path)
  if (!rel || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return false
  return rule.match(sep === '/' ? rel : rel.split(sep).join('/'))
}

/** The first rule that matches a call, for deny rules: any part of a command, any path, is enough. */
export function findDeny(
  rules: readonly Rule[],
  tool: string,
  access: ToolAccess,
  cwd: string,
  commands?: SimpleCommand[],
): Rule | undefined {
  // Assignments and redirections disqualify a command from an allow rule, never from a deny rule; and a deny rule
  // sees what each part launches (`env rm`, `xargs rm`, `find -delete`, `sh -c 'rm x'`, `git -C . push`).
  const runs = commands?.flatMap((c) => launched(c)).map(bare)
  for (const rule of rules) {
    if (!nameMatches(rule, tool)) continue
    if (rule.kind === 'tool' || rule.kind === 'tool-prefix') return rule
    if (rule.kind === 'command-text' && access.command?.trim() === rule.command) return rule
    if (rule.kind === 'command' && access.command !== undefined) {
      if (runs?.some((c) => matchesCommand(rule, c))) return rule
      // The parser could not split it: judge the raw text by its leading words.
      if (!commands && startsWithWords(access.command, rule.words)) return rule
    }
    if (rule.kind === 'path' && access.paths?.some((p) => matchesPath(rule, p, cwd))) return rule
  }
  return undefined
}

/**
 * A command deny rule that cannot tell whether it matches: a part runs a word only known at run time (`$x f`,
 * `git $sub`, an option of a launcher nobody listed), or the command does not parse. Never allowed without asking.
 */
export function findUnjudged(
  rules: readonly Rule[],
  tool: string,
  access: ToolAccess,
  commands?: SimpleCommand[],
): Rule | undefined {
  if (access.command === undefined) return undefined
  const runs = commands?.flatMap((c) => launched(c)).map(bare)
  for (const rule of rules) {
    if (rule.kind !== 'command' || !nameMatches(rule, tool)) continue
    if (!runs) return rule
    // Unknown at a position the rule names, with every word before it matching: it may be the rule's command.
    const unknown = runs.some((c) =>
      rule.words.some((_, i) => c.words[i] === null && rule.words.slice(0, i).every((w, j) => c.words[j] === w)),
    )
    if (unknown) return rule
  }
  return undefined
}

/** For deny rules: `/bin/rm x` is `rm x`, and what the command sets or writes does not matter. */
function bare(command: SimpleCommand): SimpleCommand {
  const [first, ...rest] = command.words
  return { words: [commandName(first) ?? null, ...rest], assigns: false, writes: [] }
}

function startsWithWords(command: string, words: string[]): boolean {
  const leading = command.trim().split(/\s+/)
  return words.every((w, i) => leading[i] === w)
}
