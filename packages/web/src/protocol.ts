// The wire contract between the host and the browser client. Types only (plus two constants), so the client bundle
// can import it without pulling in anything from Node.
import type { CostTotal } from '@keel/session/cost'
import type { AgentDelta, AgentStatus, QueueKind } from '@keel/agent'
import type { CompactionOutcome } from '@keel/compaction'
import type { PermissionAnswer, PermissionAsk, PermissionMode } from '@keel/permissions'
import type { NotifySettings } from '@keel/door/call-back'
import type { Notice, SessionEvent } from '@keel/session'
import type { PlanEdit, ProposalAnswer, TodoItem } from '@keel/todo'

export type {
  AgentDelta,
  AgentStatus,
  CompactionOutcome,
  PermissionAnswer,
  PermissionAsk,
  PermissionMode,
  SessionEvent,
  TodoItem,
}

export type RpcErrorCode =
  | 'unauthorized'
  | 'forbidden'
  | 'too-large'
  | 'bad-request'
  | 'unknown-method'
  | 'invalid-session-id'
  | 'not-found'
  | 'busy'
  | 'read-only'
  | 'conflict'
  | 'unavailable'
  | 'internal'

export interface RpcError {
  code: RpcErrorCode
  message: string
}

/** Every `POST /api/<method>` answers with one of these; the HTTP status only reports transport faults. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: RpcError }

/** What the host computes from a tool's `presentCall` (the raw input is already in the `tool/call` event). */
export interface CallView {
  title: string
  kind: string
  locations?: { path: string; line?: number }[]
}

export interface HistoryEntry {
  event: SessionEvent
  /** On `tool/call` events: the tool's own presentation of the call. Never persisted. */
  view?: CallView
}

/**
 * Projection values as of `asOfSeq`, computed over the whole log (not just the page). A key that is absent means the
 * capability is absent; `todos: null` means no plan stands.
 */
export interface ProjectionsBlock {
  asOfSeq: number
  values: { todos?: TodoItem[] | null; [key: string]: unknown }
}

/** The model this host runs sessions with. */
export interface ModelInfo {
  provider: string
  model: string
  /** Tokens the context holds at most: the compaction config's window, else the model's, when either is known. */
  contextWindow?: number
}

/** Tokens as the provider reported them on `assistant/message` events (`usage`), over the whole log. */
export interface UsageSummary {
  /**
   * Input plus output tokens summed over every reply of the session. Absent for a session not open in the host:
   * summing would mean reading its whole log.
   */
  total?: number
  /** The latest reply's input plus output: what the context holds now. Absent before any reported usage. */
  context?: number
  /** Every request priced (@keel/session/cost), subagents and compaction included; absent like `total`. */
  cost?: CostTotal
}

export interface HistoryPage {
  /** Whole events in seq order, starting at a message boundary. */
  events: HistoryEntry[]
  /** Older events exist: ask again with `beforeSeq` = the first event's seq. */
  hasMore: boolean
  /** Only on the tail page (no `beforeSeq`). */
  projections?: ProjectionsBlock
  /** Only on the tail page: a turn is running (in this process, or in the one that holds the session elsewhere). */
  running?: boolean
  /** Only on the tail page: the model, and token usage as of the page's last event (live replies add to it). */
  model?: ModelInfo
  usage?: UsageSummary
  /**
   * Only on the tail page: permission asks waiting for an answer that this session's page shows (its own and its
   * subagents'), so a reload shows the approval cards again.
   */
  asks?: PermissionAsk[]
}

export interface HistoryParams {
  sessionId: string
  beforeSeq?: number
  maxMessages?: number
}

export interface SessionInfo {
  id: string
  title: string
  cwd: string
  createdAt: number
  updatedAt: number
  parent?: { sessionId: string; callId: string }
  /** A fork: the session it branched from, and the seq it branched before. */
  forkedFrom?: { sessionId: string; seq: number }
  /** The machine it runs (or ran) on, where the store records it (a shared store: PostgreSQL). */
  host?: string
  /** Open in this host (prompts run here). */
  live: boolean
  running: boolean
}

/** An image the composer attached: its file name and base64 bytes (type and size are checked from the bytes). */
export interface PromptImage {
  name: string
  data: string
}

/** A prompt waiting in the agent's queue, as the page shows it: its text (images are not shown). */
export interface QueuedItem {
  id: string
  kind: QueueKind
  text: string
}

/** A slash command file as the composer offers it. */
export interface CommandInfo {
  name: string
  description: string
  argumentHint?: string
}

export interface RpcMethods {
  /**
   * `all`: the host serves every working directory (`keel serve --all`), not just `cwd`. `host`: this machine's name
   * in a shared store, whose list holds every machine's sessions (those of another host are followed live from it).
   */
  'session.list': {
    params: Record<string, never>
    value: { sessions: SessionInfo[]; cwd: string; all: boolean; host?: string }
  }
  'session.create': { params: Record<string, never>; value: { session: SessionInfo } }
  'session.history': { params: HistoryParams; value: HistoryPage }
  /**
   * Idle, the prompt starts a turn. While a turn runs it goes into the agent's queue as `kind` (default `steer`: after
   * the running tool calls, before the turn's next request; `follow-up`: the next turn); `queued` says so. `images`:
   * attached to the prompt after its text; each checked by @keel/session/image's rule. A prompt naming a command file
   * (`/frontend:review src/`) is expanded by @keel/door/slash (as in every door) and the expansion is what lands on
   * the log, with the command named; it starts a turn of its own (`busy` while one runs).
   */
  'session.prompt': {
    params: { sessionId: string; text: string; images?: PromptImage[]; kind?: QueueKind }
    value: { accepted: true; queued?: { id: string; kind: QueueKind } }
  }
  /**
   * Takes a queued prompt (its `id` from `agent/queue`) back out of the agent's queue before it is delivered, as the
   * TUI's Alt+Up does; `taken` is what it was (null when it was delivered or taken back meanwhile). Only a session
   * this host holds has a queue here: any other (one another process runs, here or over a shared store) is refused.
   */
  'queue.remove': { params: { sessionId: string; id: string }; value: { taken: QueuedItem | null } }
  /** The slash command files of the served folder (`.keel/commands`, `.claude/commands`, `$KEEL_HOME/commands`). */
  'commands.list': { params: Record<string, never>; value: { commands: CommandInfo[] } }
  'session.cancel': { params: { sessionId: string }; value: { cancelled: boolean } }
  /**
   * Answer a waiting permission ask (`sessionId` is the session that asked: `ask.sessionId`). Any tab may answer; the
   * first answer wins and later ones get `accepted: false`.
   */
  'permission.answer': {
    params: { sessionId: string; callId: string } & PermissionAnswer
    value: { accepted: boolean }
  }
  /**
   * The permission mode and the modes a person may pick (the TUI's Shift+Tab cycle, plus the mode in force); with
   * `mode`, changes it first (logged as `permission/mode` on `sessionId`'s log). Every tab hears `permission/mode`.
   */
  'permission.mode': {
    params: { sessionId?: string; mode?: PermissionMode }
    value: { mode: PermissionMode; modes: PermissionMode[] }
  }
  /** Summarise older turns now (needs @keel/compaction in the composition): what it did, as @keel/compaction says. */
  'session.compact': { params: { sessionId: string }; value: CompactionOutcome }
  /** What "Rewind to here" on the prompt at `seq` would do: the files that change and the conflicts. Changes nothing. */
  'session.rewindPreview': { params: RewindParams; value: RewindPreviewInfo }
  /**
   * Rewinds to the start of the turn the prompt at `seq` began. `overwrite` lists the conflicting files the person
   * agreed to overwrite (the preview's list); any other conflict refuses with `conflict` and nothing changes.
   */
  'session.rewind': { params: RewindParams & { overwrite?: string[] }; value: RewindDone }
  /**
   * The person edits the session's standing plan (add, rename, move, delete, status): a `todo/write` with
   * `source: 'user'`. An edit that breaks the plan's rules is refused (`bad-request`, the rule named) and changes
   * nothing. Two tabs editing at once: both land, in order.
   */
  'plan.edit': { params: { sessionId: string; edit: PlanEdit }; value: { todos: TodoItem[] } }
  /** The person answers the pending plan proposal: edit the draft, approve (ask or auto), or reject with a sentence. */
  'plan.answer': { params: { sessionId: string; answer: ProposalAnswer }; value: { accepted: true } }
  /**
   * The person's `!command` (the text after `!`): runs it through the bash tool without asking (deny rules and the
   * mode's sandbox still apply) and records it on the log for the model's next turn. Answers when it ended, or with
   * `ran: false` and the reason when it was refused; `session.cancel` stops it.
   */
  'session.shell': {
    params: { sessionId: string; command: string }
    value: { ran: true } | { ran: false; reason: string }
  }
  /** Whether the served folder is trusted and what its project files ask for (the page's trust card). */
  'trust.status': { params: Record<string, never>; value: TrustInfo }
  /** The person trusts the served folder (as `keel trust` does); `said` is what applies now and what at a restart. */
  'trust.grant': { params: Record<string, never>; value: TrustInfo & { said: string } }
}

/** @keel/settings' trust offer for the served folder. */
export interface TrustInfo {
  folder: string
  trusted: boolean
  /** The keys its files ask for that are held back (`mode`, `mcpServers`, …). */
  held: string[]
  files: string[]
}

/** Files and conversation, files only, or conversation only (a fork before the turn). */
export type RewindScope = 'both' | 'files' | 'conversation'

export interface RewindParams {
  sessionId: string
  /** The seq of the prompt's `user/message`. */
  seq: number
  scope: RewindScope
}

/** One file a rewind changes: recreated (A: it was deleted since), deleted (D: it is new since), or restored (M, T). */
export interface RewindFileChange {
  status: 'A' | 'D' | 'M' | 'T'
  path: string
}

export interface RewindPreviewInfo {
  turn: number
  scope: RewindScope
  /** Absent when the files stay. */
  files?: {
    changes: RewindFileChange[]
    conflicts: string[]
    /** The line that names the nested repositories the rewind leaves as they are (`repositoriesLine`), if any. */
    repositories?: string
  }
  /** The conversation continues in a new session. */
  fork: boolean
}

export interface RewindDone {
  turn: number
  /** The fork the conversation continues in, when it was rewound. */
  fork?: SessionInfo
  /** Files changed (0 when the files stayed). */
  changed: number
  /** The person's changes that were overwritten (they agreed). */
  overwrote: string[]
}

export type RpcMethod = keyof RpcMethods

/** Frames on `GET /api/events` (server-sent events, one JSON object per `data:` line). */
export type ServerFrame =
  /**
   * Sent first on every (re)connection: where each live session's log ends (and each session of another process
   * this host follows), so a client can spot missed events.
   */
  | {
      type: 'hello'
      sessions: { sessionId: string; lastSeq: number; running: boolean }[]
      /** The plugins' notices of this run so far (`keel/notice`), oldest first, the last `MAX_NOTICES`. */
      notices?: Notice[]
      /** The settings' `notify` and `notifyWhen` as loaded (unset keys absent): how the page calls the person back. */
      notify: NotifySettings
    }
  /** A plugin's notice for the person (an MCP server down, checkpoints off): the page shows it as a banner. */
  | { type: 'notice'; notice: Notice }
  | { type: 'session/event'; sessionId: string; event: SessionEvent; view?: CallView }
  | { type: 'agent/delta'; sessionId: string; delta: AgentDelta }
  | { type: 'agent/status'; sessionId: string; status: AgentStatus }
  /** The agent's queued prompts changed (one was sent, delivered or taken back): what is still queued, oldest first. */
  | { type: 'agent/queue'; sessionId: string; items: QueuedItem[] }
  | { type: 'session/projection'; sessionId: string; key: string; value: unknown; seq: number }
  | { type: 'session/created'; session: SessionInfo }
  /** A tool call waits for approval; `sessionId` is the page that shows it (the top-level session). */
  | { type: 'permission/ask'; sessionId: string; ask: PermissionAsk }
  /** The person changed the permission mode (here, in another tab, or in another door). */
  | { type: 'permission/mode'; mode: PermissionMode }
  /** The ask was answered (here or elsewhere) or its turn ended: every tab drops the card. */
  | { type: 'permission/settled'; sessionId: string; askSessionId: string; callId: string }

/** Notices a page is sent on connecting: the latest ones. */
export const MAX_NOTICES = 20

export const DEFAULT_PAGE_MESSAGES = 50
export const MAX_PAGE_MESSAGES = 500
