import { statSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import type { Context } from 'cordis'
import {
  agent as agentApp,
  methods,
  PROTOCOL_VERSION,
  RequestError,
  type AgentApp,
  type AgentContext,
  type ClientCapabilities,
  type ContentBlock,
  type InitializeResponse,
  type McpServer,
  type SessionUpdate,
} from '@agentclientprotocol/sdk'
import type { McpService } from '@keel/mcp'
import type { Agent, AgentDelta, LlmAdapter, QueueKind, TurnResult } from '@keel/agent'
import { isPermissionMode, type PermissionAnswer, type PermissionAsk } from '@keel/permissions'
import type { ToolCallView } from '@keel/tools'
import {
  escapeLine,
  isSessionId,
  type Notice,
  onNotice,
  SessionNotFoundError,
  type Session,
  type SessionEvent,
} from '@keel/session'
import { settlePlan, type TodoItem } from '@keel/todo'
import { diffOfEditArgs, type FileDiff } from './diff.ts'
import {
  answerOf,
  DENY_ONCE,
  permissionRequest,
  proposalAnswerOf,
  proposalRequest,
  REQUEST_PERMISSION,
} from './permission.ts'
import { acpServers } from './mcp.ts'
import { commandsUpdate } from './commands.ts'
import { expandSlash, isSlashPrompt } from '@keel/door/slash'
import { modeState } from './modes.ts'
import { planUpdate, stopReasonOf, UpdateProjector } from './project.ts'
import { PROMPT_CAPABILITIES, promptContent } from './prompt.ts'
import { promptCommand } from './user-command.ts'
import { recordUserCommand, runUserCommand } from '@keel/door/user-command'
import { USER_COMMAND_USAGE, userCommandWords } from '@keel/door/words'
import type { ContentBlock as MessageBlock } from '@keel/session'

export interface BridgeOptions {
  /** The model for every session of this connection; created on the first `session/new` or `session/load`. */
  model(): Promise<LlmAdapter>
  /** Project the standing plan as `plan` updates (off by default: the bridge is automation-only). */
  plan: boolean
  version: string
  /** One line of diagnostics (stderr in `keel acp`). */
  log?(line: string): void
}

/** Proposals one `session/prompt` asks about at most. */
const MAX_PROPOSAL_ROUNDS = 3
const EDITOR_REJECTION = 'Rejected in the editor, without a reason. Ask what to change before proposing again.'

/** Notices kept for the first session, at most. */
const MAX_EARLY_NOTICES = 20

/** A Keel session this connection drives. */
class Bridged {
  running = false
  /** Stops the person's `!command` while one runs (session/cancel). */
  stopCommand: (() => void) | undefined
  /** The plan last sent (null: none, or cleared). */
  sentPlan: readonly TodoItem[] | null = null
  private outbox: Promise<void> = Promise.resolve()

  constructor(
    readonly agent: Agent,
    readonly client: AgentContext,
    readonly projector: UpdateProjector,
    private readonly log: (line: string) => void,
  ) {}

  get id(): string {
    return this.agent.id
  }

  /** Updates held until the client has the session's id (the answer to its `session/new`). */
  private held: SessionUpdate[] | undefined

  /** A session the client is still creating: updates wait for `open()`. */
  hold(): void {
    this.held ??= []
    this.opened ??= new Promise((done) => (this.markOpened = done))
  }

  private opened: Promise<void> | undefined
  private markOpened: (() => void) | undefined

  /** The client knows the session now: what was held goes out, in order. */
  open(): void {
    const held = this.held ?? []
    this.held = undefined
    for (const update of held) this.send(update)
    this.markOpened?.()
  }

  /** Sends now, in order; `flushed()` resolves once everything sent so far is written. */
  send(update: SessionUpdate): void {
    if (this.held) {
      this.held.push(update)
      return
    }
    const sent = this.client
      .notify(methods.client.session.update, { sessionId: this.id, update })
      .catch((error: unknown) =>
        this.log(
          `session ${this.id}: could not send an update: ${error instanceof Error ? error.message : String(error)}`,
        ),
      )
    // `.then` drops the results, so a long session does not keep a nested array of every update's outcome.
    this.outbox = Promise.all([this.outbox, sent]).then(() => {})
  }

  flushed(): Promise<void> {
    // A prompt can answer before the session is open to the client (a refused `!command`): its held updates first.
    return this.held && this.opened ? this.opened.then(() => this.outbox) : this.outbox
  }
}

function message(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!
}

function requireAbsoluteDirectory(cwd: string): void {
  if (!isAbsolute(cwd))
    throw RequestError.invalidParams({ cwd }, `cwd must be an absolute path, got ${JSON.stringify(cwd)}`)
  let directory = false
  try {
    directory = statSync(cwd).isDirectory()
  } catch {}
  if (!directory) throw RequestError.invalidParams({ cwd }, `cwd ${cwd} is not a directory`)
}

/**
 * One ACP connection over a booted Keel: its handlers, and the Keel sessions it has opened. `close()` cancels their
 * turns (killing running commands) and closes them, flushing their logs and releasing their locks.
 */
export class AcpBridge {
  readonly app: AgentApp
  private readonly sessions = new Map<string, Bridged>()
  private readonly disposers: (() => void)[] = []
  private modelPromise: Promise<LlmAdapter> | undefined
  /** Notices from before the first session (a project's MCP server that failed at start). */
  private readonly early: Notice[] = []
  /** The client said it presents `notice` updates (`clientCapabilities.session.notices`). */
  private clientShowsNotices = false
  private closed = false

  constructor(
    private readonly ctx: Context,
    private readonly options: BridgeOptions,
  ) {
    this.disposers.push(
      ctx.on('session/event', (session, event) => this.onEvent(session, event)),
      ctx.on('agent/delta', (agent, delta) => this.onDelta(agent, delta)),
      onNotice(ctx, (notice) => this.notice(notice)),
      // The mode is Keel's, not a session's: every bridged session hears a change.
      ctx.on('permission/mode', (mode) => {
        for (const bridged of this.sessions.values())
          bridged.send({ sessionUpdate: 'current_mode_update', currentModeId: mode })
      }),
    )
    // This connection's client is who Keel asks (the mode comes from `keel acp --mode`, default ask).
    const permissions = ctx.get('permissions')
    if (permissions) this.disposers.push(permissions.setAsker((ask, signal) => this.askClient(ask, signal)))
    this.app = agentApp({ name: 'keel' })
      .onRequest(methods.agent.initialize, ({ params }) => this.initialize(params.clientCapabilities))
      .onRequest(methods.agent.session.new, ({ params, client }) =>
        this.newSession(params.cwd, params.mcpServers, client),
      )
      .onRequest(methods.agent.session.load, ({ params, client }) =>
        this.loadSession(params.sessionId, params.cwd, params.mcpServers, client),
      )
      .onRequest(methods.agent.session.prompt, ({ params, signal }) =>
        this.prompt(params.sessionId, params.prompt, signal, params._meta),
      )
      .onRequest(methods.agent.session.setMode, ({ params }) => this.setMode(params.sessionId, params.modeId))
      .onNotification(methods.agent.session.cancel, ({ params }) => {
        const bridged = this.sessions.get(params.sessionId)
        bridged?.agent.cancel()
        bridged?.stopCommand?.()
      })
  }

  /** The modes this session may be in, when @keel/permissions is loaded. */
  private get modes() {
    const permissions = this.ctx.get('permissions')
    return permissions ? { modes: modeState(permissions.mode) } : {}
  }

  /** `session/set_mode`: the person picked a mode in the editor; it applies at once and is on the session's log. */
  private setMode(id: string, modeId: string): Record<string, never> {
    const bridged = this.sessions.get(id)
    if (!bridged) throw RequestError.sessionNotFound(id)
    const permissions = this.ctx.get('permissions')
    if (!permissions) throw RequestError.invalidRequest({ sessionId: id }, 'permissions are not loaded: no modes')
    const offered = modeState(permissions.mode).availableModes.some((m) => m.id === modeId)
    if (!offered || !isPermissionMode(modeId)) throw RequestError.invalidParams({ modeId }, `unknown mode ${modeId}`)
    permissions.setMode(modeId, [bridged.agent.session])
    return {}
  }

  private log(line: string): void {
    this.options.log?.(escapeLine(line))
  }

  /**
   * A plugin's notice (an MCP server down, checkpoints off) goes to the client in every session of this connection
   * as a `notice` update, when the client said it shows them (https://agentclientprotocol.com/rfds/session-notices);
   * before any session exists, the first one gets it. It is always a line on stderr, which is all a client that
   * does not show notices gets: as an agent message it would land in the middle of the reply's text.
   */
  private notice(notice: Notice): void {
    this.log(notice.text)
    // Before the first session the client may not have said yet whether it shows notices (the boot's notices, such
    // as a folder not trusted, come before `initialize`): they wait, and the first session gets them if it does.
    if (!this.sessions.size) {
      if (this.early.length < MAX_EARLY_NOTICES) this.early.push(notice)
      return
    }
    if (!this.clientShowsNotices) return
    for (const bridged of this.sessions.values()) bridged.send(this.noticeUpdate(notice))
  }

  private noticeUpdate(notice: Notice): SessionUpdate {
    const severity = notice.level === 'warn' ? 'warning' : notice.level
    return { sessionUpdate: 'notice', severity, title: escapeLine(notice.text) }
  }

  private initialize(capabilities: ClientCapabilities | undefined): InitializeResponse {
    this.clientShowsNotices = capabilities?.session?.notices != null
    return {
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { ...PROMPT_CAPABILITIES },
        // stdio servers are always supported; http and sse when the MCP plugin is loaded (it connects them all).
        mcpCapabilities: { http: this.mcp !== undefined, sse: this.mcp !== undefined },
      },
      agentInfo: { name: 'keel', title: 'Keel', version: this.options.version },
      authMethods: [],
    }
  }

  private async model(): Promise<LlmAdapter> {
    this.modelPromise ??= this.options.model()
    try {
      return await this.modelPromise
    } catch (error) {
      this.modelPromise = undefined // a later session may succeed (a key set, a server up)
      throw new RequestError(-32603, `cannot start the model: ${message(error)}`)
    }
  }

  private adopt(agent: Agent, client: AgentContext, creating = false): Bridged {
    const projector = new UpdateProjector({
      cwd: agent.cwd,
      present: (name, args) => this.ctx.tools.present(name, args),
    })
    const bridged = new Bridged(agent, client, projector, (line) => this.log(line))
    if (creating) bridged.hold()
    this.sessions.set(agent.id, bridged)
    const early = this.early.splice(0)
    if (this.clientShowsNotices) for (const notice of early) bridged.send(this.noticeUpdate(notice))
    return bridged
  }

  private async newSession(cwd: string, mcpServers: readonly McpServer[], client: AgentContext) {
    this.refuseWhenClosed()
    requireAbsoluteDirectory(cwd)
    const model = await this.model()
    this.refuseWhenClosed()
    const agent = this.ctx.agents.create({ cwd, model })
    const bridged = this.adopt(agent, client, true)
    for (const update of commandsUpdate(cwd)) bridged.send(update)
    await this.connectServers(agent.id, cwd, mcpServers)
    // Its updates (a notice of a server that failed to start) go out once the answer has told the client its id.
    setImmediate(() => bridged.open())
    return { sessionId: agent.id, ...this.modes }
  }

  /** The client's MCP servers for this session (on top of the configured ones); a failure is a log line, not an error. */
  private async connectServers(sessionId: string, cwd: string, servers: readonly McpServer[]): Promise<void> {
    if (!servers.length) return
    if (!this.mcp) {
      this.log(`ignoring ${servers.length} MCP server(s): @keel/mcp is not loaded in this composition`)
      return
    }
    try {
      await this.mcp.attach(sessionId, acpServers(servers), cwd)
    } catch (error) {
      this.log(`session ${sessionId}: MCP servers not connected: ${message(error)}`)
    }
  }

  private get mcp(): McpService | undefined {
    return this.ctx.get('mcp')
  }

  private async loadSession(id: string, cwd: string, mcpServers: readonly McpServer[], client: AgentContext) {
    this.refuseWhenClosed()
    requireAbsoluteDirectory(cwd)
    let bridged = this.sessions.get(id)
    if (!bridged) {
      if (!isSessionId(id)) throw RequestError.sessionNotFound(id)
      const model = await this.model()
      this.refuseWhenClosed()
      // Another load of the same id may have opened it while the model was starting.
      bridged = this.sessions.get(id) ?? this.resume(id, cwd, model, client)
    }
    if (bridged.running)
      throw RequestError.invalidRequest({ sessionId: id }, 'a prompt is running in this session; cancel it first')
    await this.connectServers(id, bridged.agent.cwd, mcpServers)
    // A fresh projector per replay, so a second load of the same session replays it whole.
    const replay = new UpdateProjector({
      cwd: bridged.agent.cwd,
      present: (name, args) => this.ctx.tools.present(name, args),
    })
    for (const event of bridged.agent.session.events)
      for (const update of replay.event(event, true)) bridged.send(update)
    if (this.options.plan) {
      const plan = this.standingPlan(bridged.agent.session)
      if (plan) bridged.send(planUpdate(plan))
      bridged.sentPlan = plan
    }
    for (const update of commandsUpdate(bridged.agent.cwd)) bridged.send(update)
    await bridged.flushed()
    return { ...this.modes }
  }

  private resume(id: string, cwd: string, model: LlmAdapter, client: AgentContext): Bridged {
    if (this.ctx.agents.get(id))
      throw RequestError.invalidRequest({ sessionId: id }, `session ${id} is already open in this process`)
    let opened
    try {
      opened = this.ctx.agents.resume(id, { model, cwd })
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw RequestError.sessionNotFound(id)
      throw new RequestError(-32603, `cannot open session ${id}: ${message(error)}`)
    }
    for (const repair of opened.repairs) this.log(`session ${id}: ${repair}`)
    return this.adopt(opened.agent, client)
  }

  private async prompt(id: string, blocks: readonly ContentBlock[], signal: AbortSignal, meta?: unknown) {
    const bridged = this.sessions.get(id)
    if (!bridged) throw RequestError.sessionNotFound(id)
    const command = promptCommand(blocks)
    if (command !== undefined) {
      if (bridged.running || bridged.agent.status === 'running')
        throw RequestError.invalidRequest(
          { sessionId: id },
          'a !command runs between turns; wait for the turn to end or send session/cancel',
        )
      return this.userCommand(bridged, command, signal)
    }
    // A !command of the person's runs outside the agent's queue: nothing joins it.
    if (bridged.stopCommand)
      throw RequestError.invalidRequest(
        { sessionId: id },
        'a !command is running in this session; wait for it or send session/cancel',
      )
    const parsed = promptContent(blocks)
    if ('error' in parsed) throw RequestError.invalidParams({ sessionId: id }, parsed.error)
    if (bridged.running || bridged.agent.status === 'running')
      return this.queuedPrompt(bridged, parsed.content, signal, meta)
    bridged.running = true
    // A client that cancels the request itself ($/cancel_request) or goes away cancels the turn too.
    const onAbort = () => bridged.agent.cancel()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      // A prompt naming a command file is its expansion, as in every door; any other prompt is sent as it came.
      // A prompt refused before its turn (images for a model without vision, /init beside an AGENTS.md) is the
      // client's to fix: one line.
      const from = bridged.agent.session.seq
      const typed = parsed.content.map((block) => ('text' in block ? block.text : '')).join('')
      const slash = isSlashPrompt(typed, bridged.agent.cwd)
        ? await expandSlash(this.ctx, bridged.agent, typed, false, (line) =>
            this.log(line.replace(/^keel: /, '')),
          ).catch((error: unknown) => {
            throw RequestError.invalidParams({ sessionId: id }, message(error))
          })
        : undefined
      let result = await bridged.agent
        .prompt(slash ? slash.text : parsed.content, {
          ...(slash?.command ? { command: slash.command } : {}),
          ...(slash?.model ? { model: slash.model } : {}),
        })
        .catch((error: unknown) => {
          throw RequestError.invalidParams({ sessionId: id }, message(error))
        })
      await bridged.flushed()
      result = await this.answerProposals(bridged, from, result, signal)
      const stopReason = stopReasonOf(result.reason)
      if (stopReason) return { stopReason }
      const why = result.message ?? `the turn ended: ${result.reason}`
      this.log(`session ${id}: the turn ended with an error: ${why}`)
      throw new RequestError(-32603, `the turn ended with an error: ${why}`, { sessionId: id, reason: result.reason })
    } finally {
      signal.removeEventListener('abort', onAbort)
      bridged.running = false
    }
  }

  /**
   * A prompt that is `!command`: run as every door runs it (@keel/door/user-command: bash, deny rules, the mode's
   * sandbox, no ask) and recorded for the model's next turn; the client sees it as a finished `execute` call (the
   * projector, from the log). A refusal is one agent message.
   */
  private async userCommand(bridged: Bridged, command: string, signal: AbortSignal) {
    const say = async (text: string) => {
      bridged.send({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: escapeLine(text) } })
      await bridged.flushed()
      return { stopReason: 'end_turn' as const }
    }
    if (!command) return say(USER_COMMAND_USAGE)
    const abort = new AbortController()
    const stop = () => abort.abort(new Error('cancelled'))
    signal.addEventListener('abort', stop, { once: true })
    bridged.running = true
    bridged.stopCommand = stop
    try {
      const outcome = await runUserCommand({ ctx: this.ctx, agent: bridged.agent, command, signal: abort.signal })
      if (outcome.kind === 'refused') return say(userCommandWords(command, { refused: outcome.reason }).text)
      recordUserCommand(bridged.agent, command, outcome.output)
      await bridged.flushed()
      return { stopReason: abort.signal.aborted ? ('cancelled' as const) : ('end_turn' as const) }
    } finally {
      signal.removeEventListener('abort', stop)
      bridged.running = false
      bridged.stopCommand = undefined
    }
  }

  /**
   * A turn that ended with a new pending proposal (plan mode): the client is asked, as the ACP documents leaving a
   * plan mode, and the turn the answer opens runs inside the same `session/prompt`. A rejection in the editor has
   * no sentence: the model is told to keep planning and ask. Bounded, so a model that keeps proposing ends the prompt.
   */
  private async answerProposals(bridged: Bridged, from: number, result: TurnResult, signal: AbortSignal) {
    const plans = this.ctx.get('plans')
    for (let round = 0; plans && round < MAX_PROPOSAL_ROUNDS && result.reason === 'completed'; round++) {
      const proposal = plans.proposal(bridged.agent.session)
      if (proposal?.status !== 'pending' || proposal.seq < from || signal.aborted || this.closed) break
      let answer: 'ask' | 'auto' | 'reject' = 'reject'
      try {
        const response = await bridged.client.request(REQUEST_PERMISSION, proposalRequest(bridged.id, proposal), {
          cancellationSignal: signal,
          stopWaitingOnCancel: true,
        })
        answer = proposalAnswerOf(response)
      } catch (error) {
        if (signal.aborted) break
        this.log(`session ${bridged.id}: the plan proposal could not be asked: ${message(error)}`)
        break
      }
      const answered = await plans.answer(
        bridged.agent,
        answer === 'reject' ? { kind: 'reject', message: EDITOR_REJECTION } : { kind: 'approve', mode: answer },
      )
      if ('error' in answered || !answered.turn) break
      result = await answered.turn
      await bridged.flushed()
    }
    return result
  }

  /**
   * A `session/prompt` while a turn runs goes into the agent's queue: steering by default (delivered after the
   * running tool calls, before the turn's next request), a follow-up turn with `_meta.keel.whileRunning:
   * "follow-up"`, or refused with `"refuse"`. It is answered once the agent is idle again, with the stop reason of
   * the last turn; cancelling this request takes the prompt back out of the queue if it is still there.
   */
  private async queuedPrompt(bridged: Bridged, content: MessageBlock[], signal: AbortSignal, meta: unknown) {
    const wish = whileRunning(meta)
    if (wish === 'refuse' || typeof wish !== 'string')
      throw RequestError.invalidRequest(
        { sessionId: bridged.id },
        typeof wish === 'string'
          ? 'a prompt is already running in this session (the client asked to refuse, not queue); wait for it or send session/cancel'
          : wish.error,
      )
    const sent = bridged.agent.send(content, wish)
    const onAbort = () => {
      if (sent.queued) bridged.agent.queue.remove(sent.queued.id)
    }
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      await (sent.turn ?? bridged.agent.whenIdle())
      await bridged.agent.whenIdle()
      await bridged.flushed()
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
    const last = bridged.agent.session.events.findLast((event) => event.type === 'turn/end')
    const reason = last?.type === 'turn/end' ? last.data.reason : 'completed'
    return { stopReason: signal.aborted ? ('cancelled' as const) : (stopReasonOf(reason) ?? 'end_turn') }
  }

  private onEvent(session: Session, event: SessionEvent): void {
    const bridged = this.sessions.get(session.id)
    if (!bridged || bridged.agent.session !== session) return
    for (const update of bridged.projector.event(event, false)) bridged.send(update)
    if (this.options.plan && settlePlan(event)) {
      const plan = this.standingPlan(session, event)
      if (plan !== bridged.sentPlan && (plan || bridged.sentPlan)) bridged.send(planUpdate(plan))
      bridged.sentPlan = plan
    }
  }

  private onDelta(agent: Agent, delta: AgentDelta): void {
    const bridged = this.sessions.get(agent.id)
    if (!bridged || bridged.agent !== agent) return
    for (const update of bridged.projector.delta(delta)) bridged.send(update)
  }

  /**
   * Asks the client with `session/request_permission`. A subagent's ask goes to the session of its top-level parent
   * that this connection drives. The turn's cancel cancels the request; no answer, a failed request or an ask from a
   * session this connection does not drive is a denial.
   */
  private async askClient(ask: PermissionAsk, signal: AbortSignal): Promise<PermissionAnswer> {
    const bridged = this.bridgedFor(ask.sessionId)
    if (!bridged || this.closed) return DENY_ONCE
    const call =
      bridged.id === ask.sessionId ? bridged.projector.openCall(ask.callId) : this.childCall(ask, bridged.agent.cwd)
    // Updates sent so far (the call's `tool_call` and its `pending`) go first, so the client knows the call.
    await bridged.flushed()
    try {
      const response = await bridged.client.request(
        REQUEST_PERMISSION,
        permissionRequest(bridged.id, ask, bridged.agent.cwd, call),
        { cancellationSignal: signal, stopWaitingOnCancel: true },
      )
      return answerOf(response)
    } catch (error) {
      if (!signal.aborted)
        this.log(`session ${bridged.id}: permission request for ${ask.callId} failed: ${message(error)}`)
      return DENY_ONCE
    }
  }

  /** A subagent's call as its `tool/call` presents it (the client never saw it). */
  private childCall(ask: PermissionAsk, cwd: string): { view: ToolCallView; diff?: FileDiff } | undefined {
    const events = this.ctx.sessions.get(ask.sessionId)?.events ?? []
    for (let i = events.length - 1; i >= 0; i--) {
      const event = events[i]!
      if (event.type !== 'tool/call' || event.data.callId !== ask.callId) continue
      let view: ToolCallView
      try {
        view = this.ctx.tools.present(event.data.name, event.data.arguments)
      } catch {
        return undefined
      }
      const diff = view.kind === 'edit' ? diffOfEditArgs(view.rawInput, cwd) : undefined
      return { view, ...(diff ? { diff } : {}) }
    }
    return undefined
  }

  /** The bridged session an ask belongs to: its own, or the nearest bridged ancestor of a subagent's session. */
  private bridgedFor(sessionId: string): Bridged | undefined {
    let id: string | undefined = sessionId
    for (let hops = 0; id && hops < 16; hops++) {
      const bridged = this.sessions.get(id)
      if (bridged) return bridged
      id = this.ctx.sessions.get(id)?.header.parent?.sessionId
    }
    return undefined
  }

  /** The `todos` projection when it is registered; otherwise the same rule applied to the log. */
  private standingPlan(session: Session, latest?: SessionEvent): TodoItem[] | null {
    const projections = this.ctx.get('projections')
    if (projections?.has('todos')) return projections.get(session, 'todos') ?? null
    if (latest) return settlePlan(latest)?.value ?? null
    for (let i = session.events.length - 1; i >= 0; i--) {
      const settled = settlePlan(session.events[i]!)
      if (settled) return settled.value
    }
    return null
  }

  private refuseWhenClosed(): void {
    if (this.closed) throw new RequestError(-32603, 'the agent is shutting down')
  }

  /** Cancels running turns, waits (bounded) for them to end, and closes every session this connection opened. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const sessions = [...this.sessions.values()]
    for (const bridged of sessions) bridged.agent.cancel()
    const settle = Promise.all(sessions.map((bridged) => bridged.agent.whenIdle()))
    await Promise.race([settle, new Promise((done) => setTimeout(done, 5000).unref())])
    await Promise.all(sessions.map((bridged) => this.ctx.agents.closeAtExit(bridged.agent)))
    await Promise.all(sessions.map((bridged) => this.mcp?.release(bridged.id)))
    this.sessions.clear()
    for (const dispose of this.disposers.splice(0)) dispose()
  }
}

/** What the client asked a prompt sent during a turn to be: `_meta: { keel: { whileRunning } }`, steering by default. */
function whileRunning(meta: unknown): QueueKind | 'refuse' | { error: string } {
  const value = (meta as { keel?: { whileRunning?: unknown } } | null | undefined)?.keel?.whileRunning
  if (value === undefined) return 'steer'
  if (value === 'steer' || value === 'follow-up' || value === 'refuse') return value
  return { error: `_meta.keel.whileRunning must be "steer", "follow-up" or "refuse", not ${JSON.stringify(value)}` }
}
