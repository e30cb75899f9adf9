import type { Context } from 'cordis'
import type { Agent } from '@keel/agent'
import type { SandboxLevel } from '@keel/permissions'
import { textOf } from '@keel/session'
import { shellMessage } from './shell-message.ts'

// `!command`: the person runs a command themselves. Typing it is the person's consent, so nothing asks; deny rules
// and the mode's refusals still apply, and it runs at the sandbox level the mode chooses. It runs through the `bash`
// tool itself (timeout, output cap, process-group kill), and lands on the log as a user message the model reads next
// turn.

export type ShellOutcome =
  | { kind: 'refused'; reason: string }
  | { kind: 'ran'; output: string; isError: boolean; sandbox?: SandboxLevel }

export interface ShellRun {
  ctx: Context
  agent: Agent
  command: string
  signal: AbortSignal
  onUpdate?: (text: string) => void
  /**
   * Who wants it run. `typed` (the default): the person typed it, which is their consent, so what the mode would ask
   * about runs. `file`: a command file's `` !`cmd` `` (print mode, nobody to ask): only what the mode allows runs.
   */
  consent?: 'typed' | 'file'
  /** Allow rules that lift an ask for this run only (a command file's `allowed-tools`); never past a deny rule. */
  allow?: string[]
}

let runs = 0

/**
 * Decides and runs one `!command`. Nothing is logged here: the caller records a run on the log, and a refusal or a
 * decline only in the transcript (the model never asked for it).
 */
export async function runUserCommand(run: ShellRun): Promise<ShellOutcome> {
  const { ctx, agent, command, signal } = run
  const cwd = agent.cwd
  const args = { command }
  if (!ctx.tools.get('bash')) return { kind: 'refused', reason: 'the bash tool is not loaded (@keel/shell)' }
  const access = ctx.tools.access('bash', args, cwd)
  const callId = `user-shell-${process.pid}-${++runs}`
  let sandbox: SandboxLevel | undefined
  const permissions = ctx.get('permissions')
  if (permissions && access) {
    const verdict = await permissions.check('bash', access, cwd, agent.session, run.allow)
    if (verdict.outcome === 'deny') {
      const who = verdict.rule ? `the rule ${verdict.rule}` : `the ${permissions.mode} mode`
      return { kind: 'refused', reason: `denied by ${who}: ${verdict.reason}` }
    }
    // An `ask` is not a yes when nobody typed the command.
    if (verdict.outcome === 'ask' && run.consent === 'file')
      return { kind: 'refused', reason: `the ${permissions.mode} mode would ask: ${verdict.reason}` }
    sandbox = verdict.sandbox
  }
  const result = await ctx.tools.execute({
    name: 'bash',
    arguments: args,
    callId,
    agent,
    signal,
    ...(run.onUpdate ? { onUpdate: run.onUpdate } : {}),
    ...(sandbox ? { sandbox } : {}),
  })
  return { kind: 'ran', output: textOf(result.content), isError: result.isError, ...(sandbox ? { sandbox } : {}) }
}

/** Records a run on the session log: a user message (source `shell`) on the surface, so the next request has it. */
export function recordUserCommand(agent: Agent, command: string, output: string): void {
  agent.session.append(
    'user/message',
    { message: { role: 'user', source: 'shell', content: [{ type: 'text', text: shellMessage(command, output) }] } },
    { surfaceOp: { op: 'append' } },
  )
}
