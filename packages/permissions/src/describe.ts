// What a person is shown about a call (the rules offered for it are suggest.ts's).
import { relative, isAbsolute, sep } from 'node:path'
import type { ToolAccess } from './types.ts'

function shown(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  return rel && !(rel === '..' || rel.startsWith(`..${sep}`)) && !isAbsolute(rel) ? rel : path
}

/** One line: "bash: rm -rf build", "edit src/a.ts". */
export function summarize(tool: string, access: ToolAccess, cwd: string): string {
  if (access.command !== undefined)
    return `${tool}: ${access.command.split('\n')[0]}${access.command.includes('\n') ? ' …' : ''}`
  if (access.paths?.length) return `${tool} ${access.paths.map((p) => shown(p, cwd)).join(', ')}`
  if (access.hosts?.length) return `${tool} ${access.hosts.join(', ')}`
  return tool
}
