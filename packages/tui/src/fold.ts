import {
  type DiffDetails,
  failureLabel,
  resultStatus,
  textOf,
  type SessionEvent,
  type SessionEventMap,
  type TurnEndReason,
} from '@keel/session'
import type {} from '@keel/compaction' // the compaction/end event
import type {} from '@keel/subagent' // the subagent/end event
import type {} from '@keel/agent' // the model/retry event
import { addRequest, addTotal, type CostTotal, emptyCost } from '@keel/session/cost'
import type { RetryNotice } from '@keel/llm/retry-text'
import { applyPlan, openTasks, type TodoItem } from '@keel/todo'
import { parseShellMessage } from './user-shell.ts'

// The transcript is a fold over the session log. The live path feeds it each `session/event`; opening a session
// replays `session.events` through the same function, so what you saw live is what you see after `keel -c`.
// Entries hold raw (unescaped) log text; views escape at render time.

interface UserEntry {
  kind: 'user'
  seq: number
  text: string
}
interface AssistantEntry {
  kind: 'assistant'
  seq: number
  text: string
  reasoning: string
}
type ToolStatus = 'running' | 'done' | 'error' | 'cancelled'
export interface ToolEntry {
  kind: 'tool'
  seq: number
  callId: string
  name: string
  /** The raw JSON text the model sent; views present it through `ctx.tools.present`. */
  arguments: string
  status: ToolStatus
  startedAt: number
  endedAt?: number
  output: string
  /** The file change an `edit` or `write` reported (its result's `details`); absent in logs written before it. */
  diff?: DiffDetails
  /** Whether @keel/permissions let the call run, and who decided (its `permission/decision`). */
  decision?: SessionEventMap['permission/decision']
  /** How a failed command ended (`exit 3`, `timed out after 120 s`), from `failureLabel`. */
  failure?: string
}
/** A command the person ran with `!`, and its output (a `user/message` with source `shell`). */
interface ShellEntry {
  kind: 'shell'
  seq: number
  command: string
  output: string
}
export interface TurnEndEntry {
  kind: 'turn-end'
  seq: number
  turn: number
  reason: Exclude<TurnEndReason, 'completed'>
  message?: string
}
/** A turn ended while its plan still had open tasks (shown once, under the turn). */
interface OpenPlanEntry {
  kind: 'plan-open'
  seq: number
  open: string[]
}
/** Where a compaction (@keel/compaction's `compaction/end`) replaced older messages with a summary. */
interface CompactionEntry {
  kind: 'compaction'
  seq: number
  before: number
  after: number
  summarised: number
  error?: string
}
export type Entry = UserEntry | ShellEntry | AssistantEntry | ToolEntry | TurnEndEntry | CompactionEntry | OpenPlanEntry

export interface TranscriptState {
  entries: Entry[]
  /** The standing plan, by @keel/todo's one rule (`applyPlan`). */
  plan: TodoItem[] | null
  /** Summed over the session's replies; `context` is the latest reply's input plus output: what the context holds. */
  tokens: { input: number; output: number; context?: number }
  /** Every request of the session priced (its own, compaction summaries, subagents): @keel/session/cost's sums. */
  cost: CostTotal
  /** The step's request is waiting to be sent again (`model/retry`), until its reply or the turn's end. */
  retry: RetryNotice | undefined
  /** The turn now open on the log, if any. */
  openTurn: number | null
  /** Index into `entries` of each tool call's card. */
  calls: Record<string, number>
  /** The seq of the last event folded (-1 before any). */
  seq: number
  /** Tool calls (other than todo_write) since the plan was last written in this turn: how stale it may be. */
  callsSincePlan: number
}

export function emptyTranscript(): TranscriptState {
  return {
    entries: [],
    plan: null,
    tokens: { input: 0, output: 0 },
    cost: emptyCost(),
    retry: undefined,
    openTurn: null,
    calls: {},
    seq: -1,
    callsSincePlan: 0,
  }
}

/** Folds one event into the state, in place, and returns the same state. Events at or below `state.seq` are skipped. */
export function foldEvent(state: TranscriptState, event: SessionEvent): TranscriptState {
  if (event.seq <= state.seq) return state
  state.seq = event.seq
  state.plan = applyPlan(state.plan, event)
  if (event.type === 'todo/write') state.callsSincePlan = 0
  if (event.type === 'assistant/message' || event.type === 'turn/end' || event.type === 'step/start')
    state.retry = undefined
  switch (event.type) {
    case 'model/retry':
      state.retry = event.data
      break
    case 'subagent/end':
      if (event.data.cost) addTotal(state.cost, event.data.cost)
      break
    case 'turn/start':
      state.openTurn = event.data.turn
      state.callsSincePlan = 0
      break
    case 'turn/end': {
      state.openTurn = null
      if (event.data.reason !== 'completed') {
        state.entries.push({
          kind: 'turn-end',
          seq: event.seq,
          turn: event.data.turn,
          reason: event.data.reason,
          ...(event.data.message ? { message: event.data.message } : {}),
        })
      }
      const open = openTasks(state.plan)
      if (open.length) state.entries.push({ kind: 'plan-open', seq: event.seq, open })
      break
    }
    case 'user/message':
      // Harness-made user messages (compaction summaries, context blocks) are not something the person typed.
      if (event.data.message.source === undefined || event.data.message.source === 'user') {
        state.entries.push({ kind: 'user', seq: event.seq, text: textOf(event.data.message.content) })
      } else if (event.data.message.source === 'shell') {
        state.entries.push({ kind: 'shell', seq: event.seq, ...parseShellMessage(textOf(event.data.message.content)) })
      }
      break
    case 'assistant/message': {
      let text = ''
      let reasoning = ''
      for (const block of event.data.message.content) {
        if (block.type === 'text') text += block.text
        else if (block.type === 'reasoning') reasoning += block.text
      }
      if (text || reasoning) state.entries.push({ kind: 'assistant', seq: event.seq, text, reasoning })
      if (event.data.usage) {
        state.tokens.input += event.data.usage.input
        state.tokens.output += event.data.usage.output
        state.tokens.context = event.data.usage.input + event.data.usage.output
        addRequest(state.cost, event.data.usage, event.data.costUsd)
      }
      break
    }
    case 'tool/call':
      if (event.data.name !== 'todo_write') state.callsSincePlan++
      state.calls[event.data.callId] = state.entries.length
      state.entries.push({
        kind: 'tool',
        seq: event.seq,
        callId: event.data.callId,
        name: event.data.name,
        arguments: event.data.arguments,
        status: 'running',
        startedAt: event.time,
        output: '',
      })
      break
    case 'compaction/end': {
      const { before, after, summarised, error } = event.data
      if (event.data.usage) addRequest(state.cost, event.data.usage, event.data.costUsd)
      state.entries.push({ kind: 'compaction', seq: event.seq, before, after, summarised, ...(error ? { error } : {}) })
      break
    }
    case 'permission/decision': {
      const entry = state.entries[state.calls[event.data.callId] ?? -1]
      if (entry?.kind === 'tool') entry.decision = event.data
      break
    }
    case 'tool/result': {
      const entry = state.entries[state.calls[event.data.callId] ?? -1]
      if (entry?.kind !== 'tool') break
      const details = event.data.details
      entry.endedAt = event.time
      entry.output = textOf(event.data.content)
      const status = resultStatus(event.data)
      entry.status =
        status === 'cancelled' || (event.data.isError && !details && cancelledWording(entry.output))
          ? 'cancelled'
          : status === 'ok'
            ? 'done'
            : 'error'
      const failure = entry.status === 'error' ? failureLabel(details) : undefined
      if (failure) entry.failure = failure
      if (details?.kind === 'diff') entry.diff = details
      break
    }
  }
  return state
}

/** A log written before results carried `details`: the wordings a cancelled call's result had then. */
function cancelledWording(text: string): boolean {
  const trimmed = text.trimEnd()
  return (
    trimmed === 'Error: the turn was cancelled before this tool call started.' ||
    trimmed === 'Error: tool call aborted' ||
    trimmed.endsWith('[cancelled by the user]')
  )
}

/** The cold path: the same fold over a whole log. */
export function foldEvents(
  events: readonly SessionEvent[],
  state: TranscriptState = emptyTranscript(),
): TranscriptState {
  for (const event of events) foldEvent(state, event)
  return state
}

/** The user prompts of a log, oldest first (for editor history after a resume). */
export function promptsOf(state: TranscriptState): string[] {
  return state.entries.filter((entry): entry is UserEntry => entry.kind === 'user').map((entry) => entry.text)
}
