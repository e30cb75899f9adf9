import type { Static, TSchema } from 'typebox'
import type { ImageBlock, TextBlock, ToolResultDetails } from '@keel/session'

/** The calling agent, as a tool sees it. Kept structural so @keel/tools does not depend on @keel/agent. */
export interface ToolAgent {
  readonly id: string
  readonly cwd: string
  /** The agent's session: where per-session state (e.g. `todo/write`) is appended. */
  readonly session: import('@keel/session').Session
  /** How deep in a subagent tree this agent runs (0 for a top-level agent). */
  readonly depth: number
}

/** How a command-running tool must confine what it starts: decided by the permission mode. */
export type SandboxLevel = 'workspace' | 'read-only' | 'off'

/** What a tool call would touch, declared by the tool so permission rules match without guessing. */
export interface ToolAccess {
  kind: 'read' | 'write' | 'execute' | 'network' | 'other'
  /** Absolute paths the call reads or writes. */
  paths?: string[]
  /** The shell command an `execute` call runs. */
  command?: string
  /** The hosts a `network` call reaches (web_fetch's URL host). */
  hosts?: string[]
  /**
   * An `other` call whose tool says it changes nothing (an MCP server's `readOnlyHint`). The author's word, not a
   * fact: only plan mode, where the person explores before approving, lets it run; every other mode judges it as
   * any `other` call.
   */
  declaredReadOnly?: boolean
}

export interface ToolExecution {
  callId: string
  /** The calling agent; undefined for a non-agent call. */
  agent?: ToolAgent
  signal: AbortSignal
  /** Stream partial output to UIs (not logged; the final result is). */
  onUpdate?: (text: string) => void
  /** Sandbox level the permission policy chose for this call; undefined when no policy is loaded. */
  sandbox?: SandboxLevel
  /**
   * Asks the permission policy whether this sandboxed call may reach a host its allow list does not name (the
   * sandbox's network proxy waits on the answer); undefined when no policy is loaded. `signal` aborts when the
   * command ends first.
   */
  network?: (host: string, port: number | undefined, signal: AbortSignal) => Promise<HostVerdict>
}

/** Whether a command may reach a host; a refusal's reason names the host and what would let it through. */
export type HostVerdict = { allowed: true } | { allowed: false; reason: string }

export type ToolContent = (TextBlock | ImageBlock)[]

/**
 * What `execute` may return: plain text, content blocks, or an explicit error; `details` rides along to the log for
 * front ends (never to the model).
 */
export type ToolOutput = string | { content: ToolContent; isError?: boolean; details?: ToolResultDetails }

export type ToolKind = 'read' | 'edit' | 'delete' | 'move' | 'search' | 'execute' | 'fetch' | 'think' | 'other'

export interface ToolCallView {
  title: string
  kind: ToolKind
  rawInput: unknown
  /** Files the call touches, for UIs that link them. */
  locations?: { path: string; line?: number }[]
}

export interface ToolDefinition<S extends TSchema = TSchema> {
  name: string
  description: string
  parameters: S
  execute(args: Static<S>, exec: ToolExecution): Promise<ToolOutput> | ToolOutput
  /** Pure; given arguments that passed validation. UIs call it live and on replay. */
  presentCall?(args: Static<S>): ToolCallView
  /** Safe to overlap with other concurrency-safe calls of the same assistant message. */
  concurrencySafe?: boolean
  /** Offered only beside this tool: an agent without it (excluded, or not loaded) is not offered this one either. */
  offeredWith?: string
  /**
   * Pure; given arguments that passed validation and the agent's working directory: what the call would touch.
   * Permission rules and modes decide on it. A tool without it is treated as `{ kind: 'other' }`.
   */
  access?(args: Static<S>, cwd: string): ToolAccess
  /**
   * Appended once to an "invalid arguments" error: the accepted shape in a line, so a model that sent another
   * agent's shape fixes every problem in one retry.
   */
  argumentsHelp?: string
}

export function defineTool<S extends TSchema>(definition: ToolDefinition<S>): ToolDefinition<S> {
  return definition
}

export interface ToolResult {
  content: ToolContent
  isError: boolean
  /** Recorded on `tool/result` for front ends (a file tool's diff); the model is sent `content` only. */
  details?: ToolResultDetails
}

export type { CancelledDetails, DiffDetails, DiffHunk, ToolResultDetails } from '@keel/session'

export function errorResult(message: string): ToolResult {
  return { isError: true, content: [{ type: 'text', text: `Error: ${message}` }] }
}
