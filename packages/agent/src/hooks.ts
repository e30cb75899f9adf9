// The seam between the loop and the person's hook scripts: the loop asks `ctx.hooks` (when a plugin provides it,
// @keel/extend does) at the points claude-code's hooks run, and the plugin runs them, logs each run and answers.
// Declared here, below the plugin, so the loop never imports it.
import type { ToolAgent, ToolResult } from '@keel/tools'

/** What a hook runner needs of the agent: who it is, and a way to stop its turn (a hook's `continue: false`). */
export interface HookedAgent extends ToolAgent {
  cancel(): void
}

/** A tool call as the hooks see it. */
export interface HookedCall {
  callId: string
  name: string
  /** The raw arguments as the model sent them. */
  arguments: unknown
}

/** What a `PreToolUse` hook said: it goes through the permission policy, which never lets it widen past a deny. */
export interface PreToolVerdict {
  decision: 'allow' | 'deny' | 'ask'
  reason: string
}

export interface TurnHooks {
  /** `UserPromptSubmit` (and `SessionStart` before an agent's first prompt): block it, or add context after it. */
  promptSubmit(agent: HookedAgent, prompt: string, signal: AbortSignal): Promise<{ block?: string; context?: string }>
  /** `PreToolUse`: undefined when no hook had a say. */
  preTool(agent: HookedAgent, call: HookedCall, signal: AbortSignal): Promise<PreToolVerdict | undefined>
  /** `PostToolUse`: text for the model about the result (a block's reason, added context), or undefined. */
  postTool(agent: HookedAgent, call: HookedCall, result: ToolResult, signal: AbortSignal): Promise<string | undefined>
  /** `Stop` (`SubagentStop` for a child): the reason to go on for one more step, or undefined to stop. */
  turnStop(agent: HookedAgent, active: boolean, signal: AbortSignal): Promise<string | undefined>
}
