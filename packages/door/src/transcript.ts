// The transcript: one fold of the session log into the entries every door shows (the `@keel/door/transcript`
// entry, browser-safe: the web page bundles it). The TUI feeds it each `session/event` live and replays
// `session.events` through it on open, the web store folds its window of the log through it, `keel sessions show`
// prints its entries: what one door shows live is what every door shows after a cold rebuild.
//
// The log is read, not trusted (a hand-edited file, an old version's log): each case checks the shapes it reads.
// Entries hold raw (unescaped) log text; a door escapes at render time.
//
// A new log event type gets ONE case in `CASES` below (the fold's test fails while a `SessionEventMap` member has
// none: `null` says "not shown") and, when it shows, one entry kind in `TranscriptEntry` that each door styles.
// The events of this round that will show here: queued prompts, plan proposals, hooks, jobs, mode changes.
import type { DiffDetails, SessionEvent, SessionEventMap, SessionEventType, ToolResultDetails } from '@keel/session'
import type {} from '@keel/agent' // session/model
import type {} from '@keel/checkpoint' // checkpoint/*
import type {} from '@keel/compaction' // compaction/*
import type {} from '@keel/extend' // hook/run
import { type DecisionScope, isPermissionMode } from '@keel/permissions/decisions'
import { applySubagentPlans, type SubagentPlan } from '@keel/subagent/plans'
import {
  applyPlan,
  applyProposal,
  openTasks,
  planChange,
  type PlanChange,
  type Proposal,
  parseTodoList,
  type TodoItem,
} from '@keel/todo/plan'
import { failureLabel, resultStatus } from '@keel/session/text'
import { addRequest, addTotal, type CostTotal, emptyCost } from '@keel/session/cost'
import type { RetryNotice } from '@keel/llm/retry-text'
import type {} from '@keel/subagent' // subagent/end's cost
import { imageBytes } from '@keel/session/image'
import type {} from '@keel/shell' // job/*
import { parseShellMessage } from './shell-message.ts'

/** An image the person attached to a prompt: what a door shows of it (`imageLabel`), never its bytes. */
export interface PromptImage {
  name?: string
  mediaType: string
  bytes: number
}
/** What the person typed. */
export interface UserEntry {
  kind: 'user'
  seq: number
  text: string
  /** Sent while the turn ran and delivered before its next model request (not a turn's prompt). */
  steer?: true
  /** The images attached to it, in order (stored once, on this `user/message`). */
  images?: PromptImage[]
}
/** A background job (@keel/shell) that has started and not yet exited or been killed. */
export interface RunningJob {
  id: string
  command: string
  /** When its `job/start` was written (epoch ms). */
  startedAt: number
}
/** A user message the harness wrote in the person's place (a compaction summary, a context block). */
export interface ContextEntry {
  kind: 'context'
  seq: number
  source: string
  text: string
}
/** A command the person ran with `!`, and its output (a `user/message` with source `shell`). */
export interface ShellEntry {
  kind: 'shell'
  seq: number
  command: string
  output: string
}
export interface AssistantEntry {
  kind: 'assistant'
  seq: number
  text: string
  reasoning: string
}
export type ToolStatus = 'running' | 'done' | 'error' | 'cancelled'
export type Decision = SessionEventMap['permission/decision']
export interface ToolEntry {
  kind: 'tool'
  seq: number
  callId: string
  name: string
  /** The raw JSON text the model sent; a door presents it through the tool's `presentCall`. */
  arguments: string
  status: ToolStatus
  startedAt: number
  endedAt?: number
  /** The result's text ('' while running). */
  output: string
  /** The result's `details` (absent in logs written before them). */
  details?: ToolResultDetails
  /** The file change an `edit` or `write` reported. */
  diff?: DiffDetails
  /** How a failed command ended (`exit 3`, `timed out after 120 s`), from `failureLabel`. */
  failure?: string
  /** @keel/permissions asked the person about this call: what it asked (its `permission/request` summary). */
  asked?: string
  /** Whether @keel/permissions let the call run, and who decided (its `permission/decision`). */
  decision?: Decision
  /** A `task` call's subagent: its status and, once it ended, its plan (by @keel/subagent's fold). */
  run?: SubagentPlan
  /** The hooks that ran for this call (`PreToolUse`, `PostToolUse`) and what each decided, in order. */
  hooks?: HookRun[]
}
/** One hook command's run (`hook/run`, @keel/extend), checked field by field. */
export interface HookRun {
  event: string
  command: string
  exit: number | null
  verdict: string
  timedOut?: true
  reason?: string
}
/** A hook that ran for no tool call (`UserPromptSubmit`, `Stop`, …). Shown when it decided something. */
export interface HookEntry {
  kind: 'hook'
  seq: number
  run: HookRun
}
export interface TurnEndEntry {
  kind: 'turn-end'
  seq: number
  turn: number
  reason: Exclude<SessionEventMap['turn/end']['reason'], 'completed'>
  message?: string
}
/** A turn ended while its plan still had open tasks (shown once, under the turn). */
export interface OpenPlanEntry {
  kind: 'plan-open'
  seq: number
  open: string[]
}
/** Where a compaction (`compaction/end`) replaced older messages with a summary, or failed to. */
export interface CompactionEntry {
  kind: 'compaction'
  seq: number
  before: number
  after: number
  summarised: number
  error?: string
}
/** Files were rewound (or a rewind undone) between turns (`checkpoint/restore`). */
export interface RewindEntry {
  kind: 'rewind'
  seq: number
  toTurn: number
  files: string[]
  fork?: string
  undo?: boolean
}
/** A plan the model proposed in plan mode (`plan/proposal`), updated in place as the person edits and answers it. */
export interface ProposalEntry extends Proposal {
  kind: 'proposal'
}
/** The person changed the plan (a `todo/write` with `source: 'user'`): what changed. */
export interface PlanEditEntry {
  kind: 'plan-edit'
  seq: number
  change: PlanChange
}
/** A model's `todo_write` left out items the person had added (allowed: the whole list is replaced). */
export interface PlanDroppedEntry {
  kind: 'plan-dropped'
  seq: number
  items: string[]
}
export type TranscriptEntry =
  | UserEntry
  | ProposalEntry
  | PlanEditEntry
  | PlanDroppedEntry
  | ContextEntry
  | ShellEntry
  | AssistantEntry
  | ToolEntry
  | TurnEndEntry
  | OpenPlanEntry
  | CompactionEntry
  | RewindEntry
  | HookEntry

export interface TranscriptState {
  /** An entry that changes (a tool call getting its result) is replaced by a new object, never edited in place. */
  entries: TranscriptEntry[]
  /** The standing plan, by @keel/todo's one rule (`applyPlan`). */
  plan: TodoItem[] | null
  /** Summed over the replies; `context` is the latest reply's input plus output: what the context holds. */
  tokens: { input: number; output: number; context?: number }
  /** Every request of the session priced (its own, compaction summaries, subagents): @keel/session/cost's sums. */
  cost: CostTotal
  /** The step's request is waiting to be sent again (`model/retry`), until its reply or the turn's end. */
  retry: RetryNotice | undefined
  /** The turn now open on the log, if any. */
  openTurn: number | null
  /** Index into `entries` of each tool call's entry. */
  calls: Record<string, number>
  /** The seq of the last event folded (-1 before any). */
  seq: number
  /** Tool calls (other than todo_write) since the plan was last written in this turn: how stale it may be. */
  callsSincePlan: number
  /** Background jobs running now, in start order; replaced (never edited) when one starts or ends. */
  jobs: RunningJob[]
  /** The latest plan proposal (@keel/todo's `applyProposal`), whatever became of it; its entry is `proposalEntry`. */
  proposal: Proposal | null
  proposalEntry: number
  /** Items of the standing plan the person added, which a model write may drop (then the door says so). */
  personItems: string[]
  /** The list last written or approved, kept across turns: what a person's edit changed. */
  written: TodoItem[] | null
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
    jobs: [],
    proposal: null,
    proposalEntry: -1,
    personItems: [],
    written: null,
  }
}

type Case<K extends SessionEventType> = (state: TranscriptState, event: SessionEvent<K>) => void

/**
 * Every log event type, and what it does to the transcript; `null`: it shows nothing. Optional in the type only
 * because tests merge event types of their own into `SessionEventMap`; tests/transcript.test.ts holds this table
 * against every member declared under packages/\*\/src.
 */
const CASES: { [K in SessionEventType]?: Case<K> | null } = {
  'turn/start': (state, event) => {
    state.openTurn = num(event.data.turn)
    state.callsSincePlan = 0
  },
  'turn/end': (state, event) => {
    state.openTurn = null
    state.retry = undefined
    const { reason, turn, message } = event.data
    if (reason !== 'completed') {
      state.entries.push({
        kind: 'turn-end',
        seq: event.seq,
        turn: num(turn),
        reason: TURN_END_REASONS.has(reason) ? reason : 'error',
        ...(typeof message === 'string' && message ? { message } : {}),
      })
    }
    const open = openTasks(state.plan)
    if (open.length) state.entries.push({ kind: 'plan-open', seq: event.seq, open })
  },
  'step/start': (state) => {
    state.retry = undefined
  },
  'step/end': null,
  'user/message': (state, event) => {
    const message = event.data.message
    const text = textOf(message?.content)
    const source = typeof message?.source === 'string' ? message.source : 'user'
    const images = imagesOf(message?.content)
    const attached = images.length ? { images } : {}
    if (source === 'user') state.entries.push({ kind: 'user', seq: event.seq, text, ...attached })
    // A message the person sent while the turn ran, delivered before its next request (the agent's prompt queue).
    else if (source === 'steer') state.entries.push({ kind: 'user', seq: event.seq, text, steer: true, ...attached })
    else if (source === 'shell') state.entries.push({ kind: 'shell', seq: event.seq, ...parseShellMessage(text) })
    else state.entries.push({ kind: 'context', seq: event.seq, source, text })
  },
  'assistant/message': (state, event) => {
    const content = event.data.message?.content
    const text = textOf(content)
    const reasoning = textOf(content, 'reasoning')
    if (text || reasoning) state.entries.push({ kind: 'assistant', seq: event.seq, text, reasoning })
    state.retry = undefined
    const usage = event.data.usage
    if (usage) {
      state.tokens.input += num(usage.input)
      state.tokens.output += num(usage.output)
      state.tokens.context = num(usage.input) + num(usage.output)
      addRequest(state.cost, usage, typeof event.data.costUsd === 'number' ? event.data.costUsd : undefined)
    }
  },
  'tool/call': (state, event) => {
    const { callId, name } = event.data
    if (name !== 'todo_write') state.callsSincePlan++
    state.calls[String(callId)] = state.entries.length
    state.entries.push({
      kind: 'tool',
      seq: event.seq,
      callId: String(callId),
      name: String(name),
      arguments: String(event.data.arguments ?? ''),
      status: 'running',
      startedAt: event.time,
      output: '',
    })
  },
  'tool/result': (state, event) => {
    const details = isDetails(event.data.details) ? event.data.details : undefined
    const output = textOf(event.data.content)
    // Failed is @keel/session's one rule (an error result, or a command that exited non-zero, timed out or was
    // killed); a cancel in a log older than `details` is told by its text.
    const outcome = resultStatus({ isError: event.data.isError === true, ...(details ? { details } : {}) })
    const status: ToolStatus =
      outcome === 'cancelled' || (outcome === 'failed' && isCancelledResult(output, details))
        ? 'cancelled'
        : outcome === 'failed'
          ? 'error'
          : 'done'
    const failure = status === 'error' ? failureLabel(details) : undefined
    updateCall(state, event.data.callId, {
      status,
      ...(failure ? { failure } : {}),
      endedAt: event.time,
      output,
      ...(details ? { details } : {}),
      ...(details?.kind === 'diff' ? { diff: details } : {}),
    })
  },
  'todo/write': (state, event) => {
    state.callsSincePlan = 0
    const todos = parseTodoList(event.data.todos) ?? []
    const now = new Set(todos.map((todo) => todo.content))
    // Against the list last written, not the standing plan: a person's plan carried into a new turn changed nothing.
    const before = state.written
    state.written = todos
    if (event.data.source === 'user') {
      const change = planChange(before, todos)
      if (change.added.length || change.removed.length || change.status.length || change.reordered)
        state.entries.push({ kind: 'plan-edit', seq: event.seq, change })
      state.personItems = [...state.personItems.filter((item) => now.has(item)), ...change.added]
      return
    }
    const dropped = state.personItems.filter((item) => !now.has(item))
    if (dropped.length) state.entries.push({ kind: 'plan-dropped', seq: event.seq, items: dropped })
    state.personItems = state.personItems.filter((item) => now.has(item))
  },
  'plan/proposal': (state, event) => {
    const proposal = applyProposal(state.proposal, event)
    if (!proposal || proposal === state.proposal) return
    state.proposal = proposal
    state.proposalEntry = state.entries.length
    state.entries.push({ kind: 'proposal', ...proposal })
  },
  'plan/edit': proposalAnswer,
  'plan/approve': proposalAnswer,
  'plan/reject': proposalAnswer,
  'permission/request': (state, event) =>
    updateCall(state, event.data.callId, { asked: String(event.data.summary ?? '') }),
  'permission/decision': (state, event) => {
    const decision = parseDecision(event.data)
    if (decision) updateCall(state, decision.callId, { decision })
  },
  'subagent/start': subagentRun,
  'subagent/end': (state, event) => {
    const cost = (event.data as { cost?: CostTotal }).cost
    if (cost && typeof cost === 'object') addTotal(state.cost, cost)
    subagentRun(state, event)
  },
  'compaction/start': null,
  'compaction/end': (state, event) => {
    const { before, after, summarised, error, usage } = event.data
    if (usage) addRequest(state.cost, usage, typeof event.data.costUsd === 'number' ? event.data.costUsd : undefined)
    state.entries.push({
      kind: 'compaction',
      seq: event.seq,
      before: num(before),
      after: num(after),
      summarised: num(summarised),
      ...(typeof error === 'string' && error ? { error } : {}),
    })
  },
  'compaction/trim': null,
  'checkpoint/snapshot': null,
  'checkpoint/restore': (state, event) => {
    const { toTurn, files, fork, undo } = event.data
    state.entries.push({
      kind: 'rewind',
      seq: event.seq,
      toTurn: num(toTurn),
      files: Array.isArray(files) ? files.map(String) : [],
      ...(typeof fork === 'string' && fork ? { fork } : {}),
      ...(undo === true ? { undo } : {}),
    })
  },
  'session/model': null,
  'model/retry': (state, event) => {
    state.retry = event.data
  },
  'permission/mode': null,
  'hook/run': (state, event) => {
    const { event: name, command, exit, verdict, timedOut, reason, callId } = event.data as Record<string, unknown>
    if (typeof name !== 'string' || typeof command !== 'string' || typeof verdict !== 'string') return
    const run: HookRun = {
      event: name,
      command,
      exit: typeof exit === 'number' ? exit : null,
      verdict,
      ...(timedOut === true ? { timedOut } : {}),
      ...(typeof reason === 'string' && reason ? { reason } : {}),
    }
    const entry = typeof callId === 'string' ? callEntry(state, callId) : undefined
    if (entry) updateCall(state, entry.callId, { hooks: [...(entry.hooks ?? []), run] })
    else state.entries.push({ kind: 'hook', seq: event.seq, run })
  },
  // Background jobs (@keel/shell): the doors show the running ones (the TUI's footer and /jobs, the web header).
  'job/start': (state, event) => {
    const { id, command } = event.data
    if (typeof id !== 'string' || state.jobs.some((job) => job.id === id)) return
    state.jobs = [...state.jobs, { id, command: typeof command === 'string' ? command : '', startedAt: event.time }]
  },
  'job/kill': (state, event) => endJob(state, event.data.id),
  'job/exit': (state, event) => endJob(state, event.data.id),
}

/** The log event types the fold knows, for the test that every `SessionEventMap` member has a case. */
export const FOLDED_TYPES: readonly string[] = Object.keys(CASES)

/** Folds one event into the state, in place, and returns it. Events at or below `state.seq` are skipped. */
export function foldEvent(state: TranscriptState, event: SessionEvent): TranscriptState {
  if (event.seq <= state.seq) return state
  state.seq = event.seq
  try {
    state.plan = applyPlan(state.plan, event)
  } catch {
    // A plan of the wrong shape leaves the standing one.
  }
  const fold = Object.hasOwn(CASES, event.type)
    ? (CASES[event.type] as Case<typeof event.type> | null | undefined)
    : null
  try {
    fold?.(state, event)
  } catch {
    // A hand-edited or hostile file can put anything in `data`: that event shows nothing, the transcript goes on.
  }
  return state
}

/** The cold path: the same fold over a whole log. */
export function foldEvents(events: readonly SessionEvent[], state = emptyTranscript()): TranscriptState {
  for (const event of events) foldEvent(state, event)
  return state
}

/** The person's prompts, oldest first (editor history after a resume). */
export function promptsOf(state: TranscriptState): string[] {
  return state.entries.filter((entry): entry is UserEntry => entry.kind === 'user').map((entry) => entry.text)
}

/**
 * A call that was cancelled rather than failed: the agent marks it (`details.kind === 'cancelled'`); a log written
 * before that is read by the wordings the agent, the tool registry and bash used then.
 */
export function isCancelledResult(text: string, details?: ToolResultDetails): boolean {
  if (details) return details.kind === 'cancelled'
  const trimmed = text.trimEnd()
  return (
    trimmed === 'Error: the turn was cancelled before this tool call started.' ||
    trimmed === 'Error: tool call aborted before it started' ||
    trimmed === 'Error: tool call aborted' ||
    trimmed.endsWith('[cancelled by the user]')
  )
}

const TURN_END_REASONS: ReadonlySet<string> = new Set<TurnEndEntry['reason']>([
  'aborted',
  'error',
  'max-tokens',
  'step-limit',
  'interrupted',
])
const SCOPES: ReadonlySet<string> = new Set<DecisionScope>(['once', 'session', 'always', 'rule', 'mode', 'hook'])

/** A decision event's data, checked field by field: known values are kept, anything else drops the decision. */
export function parseDecision(data: unknown): Decision | undefined {
  if (!data || typeof data !== 'object') return undefined
  const { callId, decision, scope, rule, rules, file, message, mode, interrupted, answeredOn } = data as Record<
    string,
    unknown
  >
  if (typeof callId !== 'string' || (decision !== 'allow' && decision !== 'deny')) return undefined
  if (typeof scope !== 'string' || !SCOPES.has(scope)) return undefined
  const ruleList = Array.isArray(rules) ? rules.filter((item): item is string => typeof item === 'string') : []
  return {
    callId,
    decision,
    scope: scope as DecisionScope,
    ...(typeof rule === 'string' && rule ? { rule } : {}),
    ...(ruleList.length ? { rules: ruleList } : {}),
    ...(typeof file === 'string' && file ? { file } : {}),
    ...(typeof message === 'string' && message ? { message } : {}),
    ...(isPermissionMode(mode) ? { mode } : {}),
    ...(interrupted === true ? { interrupted } : {}),
    ...(typeof answeredOn === 'string' && answeredOn ? { answeredOn } : {}),
  }
}

/** The person edited, approved or rejected the latest proposal: its entry is replaced by the new state. */
function proposalAnswer(
  state: TranscriptState,
  event: SessionEvent<'plan/edit' | 'plan/approve' | 'plan/reject'>,
): void {
  const proposal = applyProposal(state.proposal, event)
  if (!proposal || proposal === state.proposal) return
  state.proposal = proposal
  // The approved checklist is the proposal's, shown on its card: the write that follows is no edit of the person's.
  if (proposal.status === 'approved') state.written = proposal.todos
  if (state.entries[state.proposalEntry]?.kind === 'proposal')
    state.entries[state.proposalEntry] = { kind: 'proposal', ...proposal }
}

/** A `task` call's run, by @keel/subagent's own fold over this one call. */
function subagentRun(state: TranscriptState, event: SessionEvent<'subagent/start' | 'subagent/end'>): void {
  const callId = String(event.data.callId)
  const entry = callEntry(state, callId)
  if (!entry) return
  const previous = entry.run
  const run = applySubagentPlans(previous ? { [callId]: previous } : {}, event)[callId]
  if (run && run !== previous) updateCall(state, callId, { run })
}

function callEntry(state: TranscriptState, callId: unknown): ToolEntry | undefined {
  const entry = state.entries[state.calls[String(callId)] ?? -1]
  return entry?.kind === 'tool' ? entry : undefined
}

function updateCall(state: TranscriptState, callId: unknown, patch: Partial<ToolEntry>): void {
  const entry = callEntry(state, callId)
  if (entry) state.entries[state.calls[String(callId)]!] = { ...entry, ...patch }
}

function isDetails(value: unknown): value is ToolResultDetails {
  const kind = (value as { kind?: unknown } | null)?.kind
  if (kind === 'command') {
    const exit = (value as { exit?: { kind?: unknown } }).exit
    return exit?.kind === 'exited' || exit?.kind === 'killed' || exit?.kind === 'timeout'
  }
  return kind === 'cancelled' || (kind === 'diff' && Array.isArray((value as DiffDetails).hunks))
}

function endJob(state: TranscriptState, id: unknown): void {
  if (state.jobs.some((job) => job.id === id)) state.jobs = state.jobs.filter((job) => job.id !== id)
}

/** The images of a message's content, by what the doors show of them; the size from the base64's length. */
function imagesOf(content: unknown): PromptImage[] {
  if (!Array.isArray(content)) return []
  const out: PromptImage[] = []
  for (const block of content) {
    if (block?.type !== 'image' || typeof block.data !== 'string' || typeof block.mediaType !== 'string') continue
    out.push({
      ...(typeof block.name === 'string' && block.name ? { name: block.name } : {}),
      mediaType: block.mediaType,
      bytes: imageBytes(block),
    })
  }
  return out
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}

function textOf(content: unknown, type = 'text'): string {
  if (!Array.isArray(content)) return ''
  let out = ''
  for (const block of content) if (block?.type === type && typeof block.text === 'string') out += block.text
  return out
}
