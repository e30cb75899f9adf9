import { join } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { projectRoot } from '@keel/settings'
import { isFolder, markdownFiles, readBounded } from './files.ts'
import { parseFrontmatter } from './frontmatter.ts'

// Agent definitions in claude-code's subagent format (https://docs.claude.com/en/docs/claude-code/sub-agents): one
// Markdown file per agent, frontmatter `name`, `description`, optional `tools` (a comma list) and `model`; the body
// is the agent's system prompt. The `task` tool takes an `agent` name and runs the child with them.

type AgentScope = 'project' | 'user'

export interface AgentDefinition {
  name: string
  description: string
  /** The tools it is offered, as named in the file (Keel's names, or claude-code's, see `toolNames`); all when absent. */
  tools?: string[]
  /** `<provider>/<model>`, or claude-code's `inherit` / `sonnet` / `opus` / `haiku` (then the parent's model). */
  model?: string
  prompt: string
  path: string
  scope: AgentScope
}

export interface AgentSet {
  agents: AgentDefinition[]
  warnings: string[]
  folders: { path: string; scope: AgentScope; found: number }[]
}

export function agentFolders(cwd: string): { path: string; scope: AgentScope }[] {
  const root = projectRoot(cwd)
  return [
    { path: join(root, '.keel', 'agents'), scope: 'project' },
    { path: join(root, '.claude', 'agents'), scope: 'project' },
    { path: join(keelHome(), 'agents'), scope: 'user' },
  ]
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i

export function loadAgents(cwd: string): AgentSet {
  const set: AgentSet = { agents: [], warnings: [], folders: [] }
  const byName = new Map<string, AgentDefinition>()
  for (const folder of agentFolders(cwd)) {
    let found = 0
    if (isFolder(folder.path))
      for (const rel of markdownFiles(folder.path)) {
        const path = join(folder.path, rel)
        try {
          const { fields, body } = parseFrontmatter(readBounded(path, folder.path))
          const name = fields.name ?? rel.slice(0, -3).split('/').pop()!
          if (!NAME.test(name)) throw new Error(`line 1: name ${JSON.stringify(name)} is not an agent name`)
          if (!fields.description) throw new Error('line 1: the frontmatter has no description')
          const earlier = byName.get(name)
          if (earlier) throw new Error(`agent ${name} is already defined by ${earlier.path}`)
          const tools = fields.tools
            ?.split(',')
            .map((tool) => tool.trim())
            .filter(Boolean)
          const definition: AgentDefinition = {
            name,
            description: fields.description.replace(/\s+/g, ' ').trim(),
            prompt: body.trim(),
            path,
            scope: folder.scope,
            ...(tools?.length ? { tools } : {}),
            ...(fields.model ? { model: fields.model } : {}),
          }
          byName.set(name, definition)
          set.agents.push(definition)
          found++
        } catch (error) {
          set.warnings.push(`${path}: skipped, ${(error as Error).message}`)
        }
      }
    set.folders.push({ ...folder, found })
  }
  return set
}

/** claude-code's tool names, as its files write them, to Keel's. */
const CLAUDE_TOOLS: Record<string, string[]> = {
  Bash: ['bash', 'job_output', 'job_kill'],
  Read: ['read'],
  Write: ['write'],
  Edit: ['edit'],
  MultiEdit: ['edit'],
  Grep: ['grep'],
  Glob: ['glob'],
  LS: ['ls'],
  WebFetch: ['web_fetch'],
  TodoWrite: ['todo_write'],
  Task: ['task'],
  Skill: ['skill'],
}

/**
 * Keel's tool names for a list written in either agent's words (`Read, Grep` or `read, grep`); a permission-rule
 * form (`Bash(git add:*)`) names its tool. Unknown names are kept (an MCP tool's `mcp__server__tool`).
 */
export function toolNames(list: readonly string[]): string[] {
  const out = new Set<string>()
  for (const raw of list) {
    const tool = raw.replace(/\(.*$/, '').trim()
    for (const name of CLAUDE_TOOLS[tool] ?? [tool]) out.add(name)
  }
  return [...out]
}

/** The models claude-code's files name by family; Keel runs those on the parent's model. */
export function definitionModel(model: string | undefined): string | undefined {
  if (!model?.includes('/')) return undefined
  return model
}
