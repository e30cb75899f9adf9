// A prompt that names a slash command file (`/review src/`): the command expanded into the prompt that goes on the
// log, for every door (print mode, the TUI, the web page, ACP). Discovery and expansion are @keel/extend's; this
// supplies the shell, which is Keel's own `bash` tool behind the permission check and the sandbox, and applies the
// file's `allowed-tools` (its shell-outs run without asking, never past a deny rule) and `model` (the turn's model).
import type { Context } from 'cordis'
import type { Agent, LlmAdapter } from '@keel/agent'
import {
  expandCommand,
  loadCommands,
  loadSkills,
  parseInvocation,
  type ShellOutcome,
  type SlashCommand,
} from '@keel/extend'
import { trustState } from '@keel/settings'
import { INIT_COMMAND, initRefusal, initRun, isInit } from './init.ts'
import { runUserCommand } from './user-command.ts'

/** A slash prompt that cannot run as asked (`/init` beside an AGENTS.md it would overwrite): one line for the door. */
export class SlashRefusal extends Error {}

/** Whether `prompt` invokes a command file (then the early first request is not sent: the prompt is not final). */
export function isSlashPrompt(prompt: string, cwd: string): boolean {
  if (isInit(prompt)) return true
  const invocation = parseInvocation(prompt)
  return !!invocation && loadCommands(cwd).commands.some((command) => command.name === invocation.name)
}

/** The command files of `cwd` as a door lists them: `/name`, what it does, its argument hint. */
export function slashCommandList(cwd: string): { name: string; description: string; argumentHint?: string }[] {
  return loadCommands(cwd).commands.map((command) => ({
    name: command.name,
    description: command.description,
    ...(command.argumentHint ? { argumentHint: command.argumentHint } : {}),
  }))
}

/** The skills of `cwd` as a door lists them (`/skills`). */
export function skillList(cwd: string): { name: string; description: string; scope: string }[] {
  return loadSkills(cwd).skills.map(({ name, description, scope }) => ({ name, description, scope }))
}

export interface SlashExpansion {
  text: string
  command?: string
  /** The file's `model`, when it names one Keel can run (`provider/model`) and may (the person's, or trusted). */
  model?: LlmAdapter
}

/**
 * The prompt to send and the command it came from, or the prompt unchanged. A project's `` !`cmd` `` runs only when
 * the trust gate trusts the folder for its own files (`keel trust` recorded, or `--trust`); an empty gate (no
 * project settings to hash) does not count as trust for running code.
 */
export async function expandSlash(
  ctx: Context,
  agent: Agent,
  prompt: string,
  trustFlag: boolean,
  warn: (line: string) => void,
): Promise<SlashExpansion> {
  // The built-in /init comes before a command file of the same name.
  if (isInit(prompt)) {
    const init = initRun(agent.cwd)
    if (init.exists) throw new SlashRefusal(initRefusal(init))
    return { text: init.prompt, command: INIT_COMMAND.name }
  }
  const invocation = parseInvocation(prompt)
  if (!invocation) return { text: prompt }
  const set = loadCommands(agent.cwd)
  for (const line of set.warnings) warn(`keel: ${line}`)
  const command = set.commands.find((c) => c.name === invocation.name)
  if (!command) return { text: prompt }
  const gate = trustState(agent.cwd)
  const trusted = trustFlag || (gate.trusted && gate.hash !== '')
  const allow = allowedRules(command)
  const expansion = await expandCommand(command, invocation.args, {
    cwd: agent.cwd,
    trusted,
    shell: (cmd) => runShell(ctx, agent, cmd, allow),
  })
  for (const run of expansion.shell)
    if (!run.ran) warn(`keel: /${command.name}: \`${run.command}\` was not run: ${run.reason}`)
  for (const file of expansion.skipped) warn(`keel: /${command.name}: @${file.path} not included: ${file.reason}`)
  const model = await commandModel(ctx, agent, command, trusted, warn)
  return { text: expansion.text, command: command.name, ...(model ? { model } : {}) }
}

/** claude-code's `Bash(git add:*)` as Keel's rule `bash(git add:*)`; the rules only ever lift an ask. */
function allowedRules(command: SlashCommand): string[] {
  if (!command.allowedTools) return []
  return [...command.allowedTools.matchAll(/([A-Za-z_][\w-]*)(\([^)]*\))?/g)].map(
    ([, tool, scope]) => `${tool!.toLowerCase()}${scope ?? ''}`,
  )
}

async function commandModel(
  ctx: Context,
  agent: Agent,
  command: SlashCommand,
  trusted: boolean,
  warn: (line: string) => void,
): Promise<LlmAdapter | undefined> {
  if (!command.model) return undefined
  if (!command.model.includes('/')) {
    warn(`keel: /${command.name}: model ${command.model} is not <provider>/<model>; the run's model answers`)
    return undefined
  }
  if (command.scope === 'project' && !trusted) {
    warn(`keel: /${command.name}: its model ${command.model} waits for keel trust; the run's model answers`)
    return undefined
  }
  try {
    return await ctx.llm.create(command.model, { cwd: agent.cwd })
  } catch (error) {
    warn(`keel: /${command.name}: model ${command.model}: ${(error as Error).message}; the run's model answers`)
    return undefined
  }
}

/**
 * A command file's `` !`cmd` ``, run as every door runs a `!command` (@keel/door/user-command) but asking nobody: only
 * what the mode or the file's `allowed-tools` allows runs.
 */
async function runShell(ctx: Context, agent: Agent, command: string, allow: string[]): Promise<ShellOutcome> {
  const outcome = await runUserCommand({
    ctx,
    agent,
    command,
    signal: new AbortController().signal,
    consent: 'file',
    allow,
  })
  return outcome.kind === 'refused' ? { ran: false, reason: outcome.reason } : { ran: true, output: outcome.output }
}
