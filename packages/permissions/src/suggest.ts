// The rules "always" and "allow for this session" offer for a call, the way a person means them: for a command,
// one rule per part that needed asking (the parts the read-only list or an allow rule already covers run unasked),
// as a subcommand prefix for npm/git/cargo-style tools (`npm test 2>&1 | tail -3` → `bash(npm test:*)`), else the
// part's exact words. A part no rule can ever allow (a redirection to a file, a `VAR=…` prefix, a word known only at
// run time) or a command the parser cannot judge (a loop) gets none: offering a rule that would not match is a lie.
import { relative, isAbsolute, sep } from 'node:path'
import { analyzeCommand, type SimpleCommand } from './command.ts'
import { isReadOnly } from './readonly.ts'
import { matchesCommand, type Rule } from './rules.ts'
import type { ToolAccess } from './types.ts'

// Tools whose second word names what they do (`npm test`, `git push`): "always" allows that subcommand.
const SUBCOMMAND_TOOLS = new Set([
  'npm',
  'npx',
  'pnpm',
  'yarn',
  'bun',
  'deno',
  'git',
  'cargo',
  'go',
  'make',
  'docker',
  'kubectl',
  'pip',
  'uv',
  'poetry',
  'mvn',
  'gradle',
  'dotnet',
  'just',
])
const RUN_WORDS = new Set(['run', 'exec', 'x'])
const SAFE_WORD = /^[A-Za-z0-9][\w.:-]*$/
const PLAIN_WORD = /^[\w./:,+@%=-]+$/

function shown(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  return rel && !(rel === '..' || rel.startsWith(`..${sep}`)) && !isAbsolute(rel) ? rel : path
}

/** A word as the rule parser reads it back: plain, or single-quoted. */
function quote(word: string): string {
  return PLAIN_WORD.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/** The rule for one part, or undefined when no rule could allow it. */
function partRule(tool: string, part: SimpleCommand): string | undefined {
  if (part.assigns || part.writes.length || !part.words.length || part.words.some((w) => w === null)) return undefined
  const words = part.words as string[]
  if (SUBCOMMAND_TOOLS.has(words[0]!) && words[1] !== undefined && SAFE_WORD.test(words[1])) {
    const take = RUN_WORDS.has(words[1]) && words[2] !== undefined && SAFE_WORD.test(words[2]) ? 3 : 2
    return `${tool}(${words.slice(0, take).join(' ')}:*)`
  }
  return `${tool}(${words.map(quote).join(' ')})`
}

export interface Suggestion {
  /** What "always" saves. */
  always: string[]
  /** What "allow for this session" holds. */
  session: string[]
}

/**
 * The rules to offer for a call that is being asked about. `allow` are the rules in force (parts they cover did not
 * need asking). Empty lists mean no rule can cover the call: only "once" and "deny" make sense.
 */
export function suggestRules(tool: string, access: ToolAccess, cwd: string, allow: readonly Rule[] = []): Suggestion {
  if (access.command !== undefined) {
    const analysis = analyzeCommand(access.command.trim())
    if (!analysis.ok || !analysis.commands.length) return { always: [], session: [] }
    const parts = analysis.commands
    const asked = parts.filter(
      (part) => !isReadOnly(part) && !allow.some((rule) => rule.tool === tool && matchesCommand(rule, part)),
    )
    const rules: string[] = []
    for (const part of asked.length ? asked : parts) {
      const rule = partRule(tool, part)
      if (!rule) return { always: [], session: [] }
      if (!rules.includes(rule)) rules.push(rule)
    }
    return { always: rules, session: rules }
  }
  // A network tool: the host, for this session or always (`web_fetch(docs.python.org)`).
  if (access.kind === 'network' && access.hosts?.length) {
    const rules = [...new Set(access.hosts.map((host) => `${tool}(${host})`))]
    return { always: rules, session: rules }
  }
  // A file tool: "always" names the path; "this session" is the tool inside the working directory (writes outside
  // it are asked about whatever the rules say).
  if (access.paths?.length) {
    const always = access.paths.map((path) => `${tool}(${shown(path, cwd)})`)
    return { always: [...new Set(always)], session: [tool] }
  }
  return { always: [tool], session: [tool] }
}
