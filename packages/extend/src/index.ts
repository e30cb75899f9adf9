import type { Context } from 'cordis'
import Schema from 'schemastery'
import type {} from '@keel/agent' // agent/system
import { notify } from '@keel/session'
import type { HookFile } from './hook-config.ts'
import { HookService } from './hooks.ts'
import { skillTool } from './skill-tool.ts'
import { loadSkills, skillsSection } from './skills.ts'

export {
  commandFolders,
  expandCommand,
  loadCommands,
  parseInvocation,
  type CommandSet,
  type Expansion,
  type ExpandOptions,
  type ShellOutcome,
  type SlashCommand,
} from './commands.ts'
export { parseFrontmatter, type Frontmatter } from './frontmatter.ts'
export { FILE_LIMIT } from './files.ts'
export { loadSkills, skillFolders, skillsSection, type Skill, type SkillSet } from './skills.ts'
export { loadAgents, agentFolders, toolNames, definitionModel, type AgentDefinition, type AgentSet } from './agents.ts'
export { HOOK_EVENTS, parseHooks, type HookCommand, type HookEvent, type HookFile } from './hook-config.ts'
export { HookService } from './hooks.ts'

export const name = 'keel-extend'
export const inject = ['tools', 'sessions']

export interface Config {
  /** The settings files' `hooks`, each with its file (the CLI passes them after the trust gate). */
  hookFiles: HookFile[]
}

export const Config: Schema<Config> = Schema.object({
  hookFiles: Schema.array(Schema.object({ path: Schema.string().required(), hooks: Schema.any() }))
    .default([])
    .description("The settings files' hooks (claude-code's format), each with the file it came from."),
})

/**
 * The `skill` tool, the skills' lines in each agent's system prompt, and `ctx.hooks`. Slash commands and agent
 * definitions are read by their callers (the doors, `task`) through this package's functions.
 */
export function apply(ctx: Context, config: Config): void {
  ctx.tools.register(skillTool())
  const warned = new Set<string>()
  ctx.on('agent/system', (agent, sections) => {
    const set = loadSkills(agent.cwd)
    for (const line of set.warnings) if (!warned.has(line) && warned.add(line)) notify(ctx, 'extend', line)
    sections.push(skillsSection(set.skills))
  })
  ctx.plugin(HookService, config.hookFiles ?? [])
  ctx.inject(['invariants'], (ctx) => ctx.invariants.allowBetweenTurns('hook/run'))
}
