// What a person is shown about a call, and the narrowest rule "always allow" records for it.
import { relative, isAbsolute, sep } from 'node:path'
import { analyzeCommand } from './command.ts'
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

function shown(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  return rel && !(rel === '..' || rel.startsWith(`..${sep}`)) && !isAbsolute(rel) ? rel : path
}

/** One line: "bash: rm -rf build", "edit src/a.ts". */
export function summarize(tool: string, access: ToolAccess, cwd: string): string {
  if (access.command !== undefined)
    return `${tool}: ${access.command.split('\n')[0]}${access.command.includes('\n') ? ' …' : ''}`
  if (access.paths?.length) return `${tool} ${access.paths.map((p) => shown(p, cwd)).join(', ')}`
  return tool
}

/**
 * The narrowest rule that covers this call: a plain command's exact words (or its subcommand for npm, git, cargo…),
 * a compound command's exact text, each path exactly, or the tool's name when it declares nothing.
 */
export function suggestRule(tool: string, access: ToolAccess, cwd: string): string {
  if (access.command !== undefined) {
    const command = access.command.trim()
    const analysis = analyzeCommand(command)
    const single = analysis.ok && analysis.commands.length === 1 ? analysis.commands[0]! : undefined
    if (single && !single.assigns && !single.writes.length && single.words.every((w) => w !== null)) {
      const words = single.words as string[]
      const safeWord = (w: string | undefined) => w !== undefined && /^[A-Za-z0-9][\w.:-]*$/.test(w)
      if (SUBCOMMAND_TOOLS.has(words[0]!) && safeWord(words[1])) {
        const take = RUN_WORDS.has(words[1]!) && safeWord(words[2]) ? 3 : 2
        return `${tool}(${words.slice(0, take).join(' ')}:*)`
      }
    }
    return `${tool}(${command})`
  }
  if (access.paths?.length === 1) return `${tool}(${shown(access.paths[0]!, cwd)})`
  return tool
}
