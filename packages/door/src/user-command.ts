import type { Context } from 'cordis'
import type { Agent } from '@keel/agent'
import { appendRule, summarize, suggestRule, type Asker, type SandboxLevel } from '@keel/permissions'
import { textOf } from '@keel/session'
import { shellMessage } from './shell-message.ts'

// `!command`: the person runs a command themselves. It goes through the same gate as the model's `bash` calls (the
// permission mode and rules of @keel/permissions, and the sandbox level they choose), runs through the `bash` tool
// itself (timeout, output cap, process-group kill), and lands on the log as a user message the model reads next turn.

export type ShellOutcome =
  | { kind: 'refused'; reason: string }
  | { kind: 'ran'; output: string; isError: boolean; sandbox?: SandboxLevel }

export interface ShellRun {
  ctx: Context
  agent: Agent
  command: string
  /** How the calling door asks the person (the TUI's approval prompt, the web page's card, ACP's request). */
  asker: Asker
  signal: AbortSignal
  onUpdate?: (text: string) => void
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
    const verdict = await permissions.check('bash', access, cwd)
    if (verdict.outcome === 'deny') {
      const who = verdict.rule ? `the rule ${verdict.rule}` : `the ${permissions.mode} mode`
      return { kind: 'refused', reason: `denied by ${who}: ${verdict.reason}` }
    }
    if (verdict.outcome === 'ask') {
      const suggested = suggestRule('bash', access, cwd)
      const answer = await run.asker(
        {
          sessionId: agent.id,
          callId,
          tool: 'bash',
          summary: summarize('bash', access, cwd),
          detail: command,
          suggestedRule: suggested,
          reason: verdict.reason,
        },
        signal,
      )
      if (signal.aborted) return { kind: 'refused', reason: 'cancelled' }
      if (answer.decision === 'deny') return { kind: 'refused', reason: 'you declined it' }
      if (answer.scope === 'always') {
        try {
          appendRule(cwd, 'allow', suggested)
          permissions.configure({ allow: [suggested] })
        } catch (error) {
          permissions.notice((error as Error).message)
        }
      }
    }
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
