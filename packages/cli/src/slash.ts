// A print-mode prompt that names a slash command (`keel -p "/review src/"`): the command's file expanded into the
// prompt that goes on the log. Discovery and expansion are @keel/extend's; this only supplies the shell, which is
// Keel's own `bash` tool behind the permission check and the sandbox, as for every door's `!command`.
import type { Context } from 'cordis'
import type { Agent } from '@keel/agent'
import { expandCommand, loadCommands, parseInvocation, type ShellOutcome } from '@keel/extend'
import { runUserCommand } from '@keel/door/user-command'
import { trustState } from '@keel/settings'
import { INIT_COMMAND, initRefusal, initRun, isInit } from '@keel/door/init'
import { UsageError } from './args.ts'

/** Whether `prompt` invokes a command file (then the early first request is not sent: the prompt is not final). */
export function isSlashPrompt(prompt: string, cwd: string): boolean {
  if (isInit(prompt)) return true
  const invocation = parseInvocation(prompt)
  return !!invocation && loadCommands(cwd).commands.some((command) => command.name === invocation.name)
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
): Promise<{ text: string; command?: string }> {
  // The built-in /init comes before a command file of the same name.
  if (isInit(prompt)) {
    const init = initRun(agent.cwd)
    if (init.exists) throw new UsageError(initRefusal(init))
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
  const expansion = await expandCommand(command, invocation.args, {
    cwd: agent.cwd,
    trusted,
    shell: (cmd) => runShell(ctx, agent, cmd),
  })
  for (const run of expansion.shell)
    if (!run.ran) warn(`keel: /${command.name}: \`${run.command}\` was not run: ${run.reason}`)
  for (const file of expansion.skipped) warn(`keel: /${command.name}: @${file.path} not included: ${file.reason}`)
  return { text: expansion.text, command: command.name }
}

/** A command file's `` !`cmd` ``, run as every door runs a `!command` (@keel/door/user-command), asking nobody. */
async function runShell(ctx: Context, agent: Agent, command: string): Promise<ShellOutcome> {
  const outcome = await runUserCommand({ ctx, agent, command, signal: new AbortController().signal, consent: 'file' })
  return outcome.kind === 'refused' ? { ran: false, reason: outcome.reason } : { ran: true, output: outcome.output }
}
