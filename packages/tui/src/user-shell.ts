import type { Context } from 'cordis'
import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import type { Agent } from '@keel/agent'
import type { SandboxLevel } from '@keel/permissions'
import { textOf } from '@keel/session'
import { escapeControls, escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

// `!command`: the person runs a command themselves. Typing it is the person's consent, so nothing asks; deny rules
// and the mode's refusals still apply, and it runs at the sandbox level the mode chooses. It runs through the `bash` tool
// itself (timeout, output cap, process-group kill), and lands on the log as a user message the model reads next turn.

const HEADER = 'The user ran a shell command in the terminal (typed with `!`; not one of your tool calls).'
const OPEN_COMMAND = '<command>\n'
const CLOSE_COMMAND = '\n</command>\n<output>\n'
const CLOSE_OUTPUT = '\n</output>'

/** The user message the model reads: the command and its output (with the bash tool's exit-status line). */
export function shellMessage(command: string, output: string): string {
  return `${HEADER}\n${OPEN_COMMAND}${command}${CLOSE_COMMAND}${output}${CLOSE_OUTPUT}`
}

/** The command and output back out of `shellMessage` (for the transcript); the whole text as output otherwise. */
export function parseShellMessage(text: string): { command: string; output: string } {
  const start = text.indexOf(OPEN_COMMAND)
  const middle = text.indexOf(CLOSE_COMMAND, start)
  if (!text.startsWith(HEADER) || start < 0 || middle < 0 || !text.endsWith(CLOSE_OUTPUT))
    return { command: '', output: text }
  return {
    command: text.slice(start + OPEN_COMMAND.length, middle),
    output: text.slice(middle + CLOSE_COMMAND.length, text.length - CLOSE_OUTPUT.length),
  }
}

export type ShellOutcome =
  | { kind: 'refused'; reason: string }
  | { kind: 'ran'; output: string; isError: boolean; sandbox?: SandboxLevel }

export interface ShellRun {
  ctx: Context
  agent: Agent
  command: string
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
    const verdict = await permissions.check('bash', access, cwd, agent.session)
    if (verdict.outcome === 'deny') {
      const who = verdict.rule ? `the rule ${verdict.rule}` : `the ${permissions.mode} mode`
      return { kind: 'refused', reason: `denied by ${who}: ${verdict.reason}` }
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

const SHOWN_LINES = 4
const EXPANDED_LINES = 200

function lastLines(output: string, limit: number): { more: number; lines: string[] } {
  const all = escapeControls(output)
    .split('\n')
    .filter((line) => line.trim())
  const lines = all.slice(-limit)
  return { more: all.length - lines.length, lines }
}

/** A run in the transcript: `! command` and the last lines of its output (all of them with Ctrl+O). */
export function renderShellEntry(command: string, output: string, width: number, expanded: boolean): string[] {
  const fit = (line: string) => truncateToWidth(guardLine(line), Math.max(1, width), '…')
  const lines = ['', fit(`${style.magenta('!')} ${style.bold(escapeLine(command))}`)]
  const { more, lines: shown } = lastLines(output, expanded ? EXPANDED_LINES : SHOWN_LINES)
  if (more)
    lines.push(
      fit(style.dim(`  │ … ${more} earlier line${more === 1 ? '' : 's'}${expanded ? '' : '  ctrl+o to expand'}`)),
    )
  for (const line of shown) lines.push(fit(style.dim('  │ ') + line))
  return lines
}

/** The command running now, above the editor, with its live output. Empty when nothing runs. */
export class ShellRunView implements Component {
  running: { command: string; output: string } | undefined

  invalidate(): void {}

  render(width: number): string[] {
    if (!this.running) return []
    return renderShellEntry(this.running.command, this.running.output, width, false)
  }
}
