import type { AssistantMessage, TextBlock, ImageBlock, TokenUsage, UserMessage } from './messages.ts'

/** How a turn ended. `interrupted` is written only by crash repair. */
export type TurnEndReason = 'completed' | 'aborted' | 'error' | 'max-tokens' | 'step-limit' | 'interrupted'

export type TurnTrigger = 'prompt' | 'continue'

/**
 * The log vocabulary. Merge-extensible: a package adds its own events with
 * `declare module '@keel/session' { interface SessionEventMap { 'x/y': {...} } }`.
 */
export interface SessionEventMap {
  /** A turn began: the person's prompt (`prompt`) or a resumed turn (`continue`). */
  'turn/start': { turn: number; trigger: TurnTrigger }
  /** The turn is over; every call in it has a result. */
  'turn/end': { turn: number; reason: TurnEndReason; message?: string }
  /** One model request and the tool calls it asked for. */
  'step/start': { turn: number; step: number }
  'step/end': { turn: number; step: number }
  /** The person's prompt, or a compaction summary standing in for earlier messages (`surfaceOp.op === 'replace'`). */
  'user/message': { message: UserMessage }
  /**
   * What the model answered in one step: text, reasoning and tool calls, with the usage it reported and, when the
   * model's price is known, what that request cost (`costUsd`, see cost.ts).
   */
  'assistant/message': { turn: number; step: number; message: AssistantMessage; usage?: TokenUsage; costUsd?: number }
  /** `arguments` is the raw JSON string as the model sent it. */
  'tool/call': { turn: number; step: number; callId: string; name: string; arguments: string }
  /**
   * A tool call's outcome, exactly once per call (an error result when it failed or never ran). `details` is for
   * front ends only (a file tool's diff); the model is sent `content` alone. Logs written before it existed have none.
   */
  'tool/result': {
    turn: number
    step: number
    callId: string
    content: (TextBlock | ImageBlock)[]
    isError: boolean
    details?: ToolResultDetails
  }
}

/**
 * One hunk of a unified diff. Each line starts with ' ' (context), '-' (removed), '+' (added) or '\' (the line before
 * it has no final newline); the text after the sign is the file's, unescaped (front ends escape it). A hunk with
 * `oldLines` 0 starts after line `oldStart` (GNU diff's convention), likewise for `newLines` 0.
 */
export interface DiffHunk {
  oldStart: number
  oldLines: number
  newStart: number
  newLines: number
  lines: string[]
}

/** What `edit` or `write` changed in one file, so front ends draw the diff without parsing the result text. */
export interface DiffDetails {
  kind: 'diff'
  /** The path as the tool showed it (relative to the cwd when inside it). */
  path: string
  /** The file did not exist before (`write` created it). */
  created: boolean
  added: number
  removed: number
  hunks: DiffHunk[]
  /** Diff lines left out of `hunks` to keep the log small (0 when the whole diff is there). */
  omitted: number
}

/** The call was cut short or never started because the turn was cancelled (front ends say "cancelled", not "error"). */
export interface CancelledDetails {
  kind: 'cancelled'
}

/** How a command ended (the bash tool): its exit code, a signal, or the timeout (a cancel is `CancelledDetails`). */
export type CommandExit =
  | { kind: 'exited'; code: number }
  | { kind: 'killed'; signal: string }
  | { kind: 'timeout'; seconds: number }

/** A command's end, so every front end decides "failed" by the same rule (`resultStatus`, outcome.ts). */
export interface CommandDetails {
  kind: 'command'
  exit: CommandExit
}

/** Structured data a tool result carries for front ends, by `kind`. */
export type ToolResultDetails = DiffDetails | CancelledDetails | CommandDetails

export type SessionEventType = keyof SessionEventMap & string

/** The three types that produce model-visible messages. Everything else is log-only. */
export type SurfaceEventType = 'user/message' | 'assistant/message' | 'tool/result'
export const SURFACE_EVENT_TYPES: ReadonlySet<string> = new Set<SurfaceEventType>([
  'user/message',
  'assistant/message',
  'tool/result',
])
export const CORE_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'user/message',
  'assistant/message',
  'tool/call',
  'tool/result',
])

/** `append` adds the event at the end of the surface; `replace` stands in for the surface nodes with seq in [start, end]. */
export type SurfaceOp = { op: 'append' } | { op: 'replace'; start: number; end: number }
export interface SurfaceIntent {
  surfaceOp: SurfaceOp
  sourceEventSeqs?: number[]
}

interface Envelope<K extends SessionEventType> {
  readonly type: K
  readonly seq: number
  readonly time: number
  readonly data: SessionEventMap[K]
}

export type SessionEvent<K extends SessionEventType = SessionEventType> = {
  [P in K]: Envelope<P> &
    (P extends SurfaceEventType ? { readonly surfaceOp: SurfaceOp; readonly sourceEventSeqs?: readonly number[] } : {})
}[K]

/** Surface metadata is required for surface types and forbidden for every other type. */
export type AppendOptions<K extends SessionEventType> = K extends SurfaceEventType ? [intent: SurfaceIntent] : []

export interface SessionHeader {
  type: 'session'
  version: number
  id: string
  createdAt: number
  cwd: string
  parent?: { sessionId: string; callId: string }
  /** A fork: the session it branched from, and the seq there before which its events were copied. */
  forkedFrom?: { sessionId: string; seq: number }
}

export const SESSION_FORMAT_VERSION = 1

/** Session ids are what we mint (UUIDs) or a conservative slug; anything else is refused at every boundary. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/
export function isSessionId(value: unknown): value is string {
  return typeof value === 'string' && SESSION_ID_PATTERN.test(value)
}
