import { type Context, Service } from 'cordis'
import type { Agent, HookedCall, PreToolVerdict, TurnHooks } from '@keel/agent'
import type {} from '@keel/compaction' // compaction/running
import type {} from '@keel/permissions' // permission/ask
import { notify, textOf } from '@keel/session'
import { projectRoot } from '@keel/settings'
import type { ToolResult } from '@keel/tools'
import { type HookCommand, type HookEvent, type HookFile, parseHooks } from './hook-config.ts'
import { type HookOutcome, runHook } from './hook-run.ts'

// `ctx.hooks`: the person's hook commands at the points claude-code runs them, with its JSON on stdin and its
// answers read back (https://docs.claude.com/en/docs/claude-code/hooks). Every run is a `hook/run` event on the log.
// Project hooks reach this only from a trusted folder: they are a settings key the trust gate holds back.

declare module 'cordis' {
  interface Context {
    hooks: HookService
  }
}

type HookVerdict = 'ok' | 'error' | 'allow' | 'deny' | 'ask' | 'block' | 'context' | 'stop'

declare module '@keel/session' {
  interface SessionEventMap {
    /**
     * A hook command ran (@keel/extend): which event, the command, how it ended and what it decided. `callId` when it
     * ran for a tool call (shown under that call, like a permission decision).
     */
    'hook/run': {
      event: string
      command: string
      callId?: string
      /** null: killed (its timeout, a cancel) or it could not start. */
      exit: number | null
      ms: number
      timedOut?: boolean
      verdict: HookVerdict
      /** The reason or context it gave, cut to 2000 characters. */
      reason?: string
    }
  }
}

/** claude-code's names for Keel's tools, as hook matchers and scripts know them. */
const CLAUDE_NAMES: Record<string, string> = {
  bash: 'Bash',
  read: 'Read',
  write: 'Write',
  edit: 'Edit',
  grep: 'Grep',
  glob: 'Glob',
  ls: 'LS',
  web_fetch: 'WebFetch',
  todo_write: 'TodoWrite',
  task: 'Task',
  skill: 'Skill',
}

/** One hook's answer, read as claude-code reads it. */
interface Reading {
  outcome: HookOutcome
  verdict: HookVerdict
  reason?: string
  permission?: PreToolVerdict['decision']
  /** `continue: false`: the turn stops. */
  stop?: boolean
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}

/** Exit 2 blocks with stderr; exit 0 with JSON may decide; exit 0 with text adds context where the event takes it. */
function read(event: HookEvent, outcome: HookOutcome): Reading {
  if (outcome.exit === 2) return { outcome, verdict: 'block', reason: outcome.stderr.trim() || 'blocked by a hook' }
  if (outcome.exit !== 0) return { outcome, verdict: 'error', reason: outcome.stderr.trim() || undefined }
  const text = outcome.stdout.trim()
  let json: unknown
  if (!outcome.cut && text.startsWith('{'))
    try {
      json = JSON.parse(text)
    } catch {}
  if (!isObject(json)) {
    const takesText = event === 'UserPromptSubmit' || event === 'SessionStart'
    return takesText && text && !outcome.cut
      ? { outcome, verdict: 'context', reason: text }
      : { outcome, verdict: 'ok' }
  }
  const specific = isObject(json.hookSpecificOutput) ? json.hookSpecificOutput : {}
  const said = (value: unknown) => (typeof value === 'string' ? value : undefined)
  if (json.continue === false) return { outcome, verdict: 'stop', reason: said(json.stopReason), stop: true }
  const decision =
    said(specific.permissionDecision) ??
    ({ approve: 'allow', block: 'deny' } as const)[String(json.decision) as 'approve']
  if (event === 'PreToolUse' && (decision === 'allow' || decision === 'deny' || decision === 'ask'))
    return {
      outcome,
      verdict: decision,
      permission: decision,
      reason: said(specific.permissionDecisionReason) ?? said(json.reason),
    }
  if (json.decision === 'block') return { outcome, verdict: 'block', reason: said(json.reason) ?? 'blocked by a hook' }
  const context = said(specific.additionalContext)
  if (context) return { outcome, verdict: 'context', reason: context }
  return { outcome, verdict: 'ok' }
}

export class HookService extends Service implements TurnHooks {
  readonly commands: HookCommand[]
  private readonly started = new WeakSet<Agent>()

  constructor(ctx: Context, files: readonly HookFile[]) {
    super(ctx, 'hooks', true)
    const { hooks, warnings } = parseHooks(files)
    this.commands = hooks
    for (const line of warnings) notify(ctx, 'extend', line)
    ctx.on('compaction/running', (agent, info) => {
      void this.run(agent, 'PreCompact', info.reason, { trigger: info.reason, custom_instructions: '' })
    })
    ctx.on('permission/ask', (ask) => {
      const agent = ctx.get('agents')?.get(ask.sessionId) as Agent | undefined
      if (agent) void this.run(agent, 'Notification', '', { message: `Keel needs your permission to use ${ask.tool}` })
    })
    ctx.on('agent/status', (agent, status) => {
      if (status === 'disposed' && agent.depth === 0 && this.started.has(agent))
        void this.run(agent, 'SessionEnd', 'other', { reason: 'other' }, undefined, false)
    })
  }

  /** Whether any hook is set for `event`. */
  has(event: HookEvent): boolean {
    return this.commands.some((hook) => hook.event === event)
  }

  async promptSubmit(agent: Agent, prompt: string, signal: AbortSignal): Promise<{ block?: string; context?: string }> {
    const context: string[] = []
    // A session's start is the person's session's, not each subagent's (claude-code's SessionStart).
    if (agent.depth === 0 && !this.started.has(agent)) {
      this.started.add(agent)
      const source = agent.session.events.some((event) => event.type === 'turn/end') ? 'resume' : 'startup'
      for (const reading of await this.run(agent, 'SessionStart', source, { source }, signal))
        if (reading.verdict === 'context' && reading.reason) context.push(reading.reason)
    }
    const readings = await this.run(agent, 'UserPromptSubmit', '', { prompt }, signal)
    const blocked = readings.find((reading) => reading.verdict === 'block' || reading.verdict === 'stop')
    if (blocked) return { block: blocked.reason ?? 'no reason given' }
    for (const reading of readings) if (reading.verdict === 'context' && reading.reason) context.push(reading.reason)
    return context.length ? { context: context.join('\n\n') } : {}
  }

  async preTool(agent: Agent, call: HookedCall, signal: AbortSignal): Promise<PreToolVerdict | undefined> {
    const input = () => this.toolInput(call)
    const readings = await this.run(agent, 'PreToolUse', call.name, input, signal, true, call.callId)
    const stop = readings.find((reading) => reading.stop)
    if (stop) {
      agent.cancel()
      return { decision: 'deny', reason: stop.reason ?? 'a hook stopped the turn' }
    }
    // Any deny (or exit 2) wins over an ask, an ask over an allow.
    const deny = readings.find((reading) => reading.verdict === 'block' || reading.permission === 'deny')
    if (deny) return { decision: 'deny', reason: deny.reason ?? '' }
    const ask = readings.find((reading) => reading.permission === 'ask')
    if (ask) return { decision: 'ask', reason: ask.reason ?? '' }
    const allow = readings.find((reading) => reading.permission === 'allow')
    return allow ? { decision: 'allow', reason: allow.reason ?? '' } : undefined
  }

  async postTool(agent: Agent, call: HookedCall, result: ToolResult, signal: AbortSignal): Promise<string | undefined> {
    const input = () => ({
      ...this.toolInput(call),
      tool_response: { content: textOf(result.content), isError: result.isError },
    })
    const readings = await this.run(agent, 'PostToolUse', call.name, input, signal, true, call.callId)
    if (readings.some((reading) => reading.stop)) agent.cancel()
    const notes = readings
      .filter((reading) => (reading.verdict === 'block' || reading.verdict === 'context') && reading.reason)
      .map((reading) => `PostToolUse hook: ${reading.reason}`)
    return notes.length ? notes.join('\n') : undefined
  }

  async turnStop(agent: Agent, active: boolean, signal: AbortSignal): Promise<string | undefined> {
    const event = agent.depth > 0 ? 'SubagentStop' : 'Stop'
    const readings = await this.run(agent, event, '', { stop_hook_active: active }, signal)
    if (readings.some((reading) => reading.stop)) return undefined
    const more = readings.find((reading) => reading.verdict === 'block')
    return more ? `${event} hook: ${more.reason}` : undefined
  }

  private toolInput(call: HookedCall): Record<string, unknown> {
    let input: unknown = call.arguments
    if (typeof input === 'string')
      try {
        input = JSON.parse(input)
      } catch {}
    // claude-code's file tools call the path `file_path`; scripts written for them read that.
    if (isObject(input) && typeof input.path === 'string' && input.file_path === undefined)
      input = { ...input, file_path: input.path }
    return { tool_name: CLAUDE_NAMES[call.name] ?? call.name, tool_input: input, tool_use_id: call.callId }
  }

  /** Runs the hooks of `event` whose matcher takes `target`, in parallel (as claude-code does), and logs each. */
  private async run(
    agent: Agent,
    event: HookEvent,
    target: string,
    // As a function when they cost something (a call's parsed arguments, its result's text): made only when a hook
    // matches, which for most calls none does.
    fields: Record<string, unknown> | (() => Record<string, unknown>),
    signal?: AbortSignal,
    log = true,
    callId?: string,
  ): Promise<Reading[]> {
    const targets = [target, CLAUDE_NAMES[target] ?? target]
    const matching = this.commands.filter(
      (hook) =>
        hook.event === event &&
        (event === 'UserPromptSubmit' ||
          event === 'Stop' ||
          event === 'SubagentStop' ||
          event === 'Notification' ||
          targets.some((name) => hook.pattern.test(name))),
    )
    if (!matching.length) return []
    const root = projectRoot(agent.cwd)
    const input = {
      session_id: agent.id,
      transcript_path: this.ctx.sessions.pathOf(agent.id) ?? '',
      cwd: agent.cwd,
      hook_event_name: event,
      ...(typeof fields === 'function' ? fields() : fields),
    }
    const env = { ...process.env, CLAUDE_PROJECT_DIR: root, KEEL_PROJECT_DIR: root }
    return Promise.all(
      matching.map(async (hook) => {
        const outcome = await runHook(hook.command, input, {
          cwd: agent.cwd,
          env,
          timeoutMs: hook.timeout * 1000,
          ...(signal ? { signal } : {}),
        })
        const reading = outcome.timedOut
          ? { outcome, verdict: 'error' as const, reason: `timed out after ${hook.timeout} s` }
          : read(event, outcome)
        if (log)
          try {
            agent.session.append('hook/run', {
              event,
              command: hook.command,
              ...(callId ? { callId } : {}),
              exit: outcome.exit,
              ms: outcome.ms,
              ...(outcome.timedOut ? { timedOut: true } : {}),
              verdict: reading.verdict,
              ...(reading.reason ? { reason: reading.reason.slice(0, 2000) } : {}),
            })
          } catch {}
        return reading
      }),
    )
  }
}
