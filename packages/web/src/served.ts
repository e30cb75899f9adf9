import { resolve } from 'node:path'
import type { Context } from 'cordis'
import type { Agent, LlmAdapter } from '@keel/agent'
import {
  SessionNotFoundError,
  type Session,
  type SessionEvent,
  type SessionHeader,
  type SessionSummary,
} from '@keel/session'
import type { WebAsks } from './asks.ts'
import type { EventHub } from './events.ts'
import { HeldAgents } from './held.ts'
import type { CallView, HistoryEntry, SessionInfo } from './protocol.ts'
import type { RemoteSessions } from './remote.ts'
import { RpcFailure } from './rpc/failure.ts'
import { sessionIdOf, type Params } from './rpc/params.ts'
import { SessionStates } from './session-state.ts'

export interface ServedOptions {
  ctx: Context
  model: LlmAdapter
  asks: WebAsks
  hub: EventHub
  /** Sessions of this directory are served; new sessions work here. */
  cwd: string
  /** Every working directory's sessions are served. */
  all: boolean
  maxOpen: number
  idleMs: number
}

/**
 * What the web host serves once the plugins are up: the sessions in its scope, the agents it holds for them and what
 * each is doing. The RPC methods work through this; the host's routes and lifecycle stay in host.ts.
 */
export class Served {
  readonly ctx: Context
  readonly model: LlmAdapter
  readonly asks: WebAsks
  readonly hub: EventHub
  readonly cwd: string
  readonly all: boolean
  readonly states = new SessionStates()
  readonly held: HeldAgents
  /** Over a shared store: the sessions other processes run, followed live (remote.ts). */
  remote: RemoteSessions | undefined

  constructor(options: ServedOptions) {
    this.ctx = options.ctx
    this.model = options.model
    this.asks = options.asks
    this.hub = options.hub
    this.cwd = options.cwd
    this.all = options.all
    this.held = new HeldAgents({
      maxOpen: options.maxOpen,
      idleMs: options.idleMs,
      busy: (agent) => this.states.of(agent.id).kind !== 'idle' || agent.status === 'running',
      close: (agent) => this.ctx.agents.close(agent),
    })
  }

  /**
   * The session id of a request, if this host serves that session: one of its working directory, or any with `--all`.
   * Any other is answered exactly like an id with no session, so the API does not tell which exist elsewhere.
   */
  scopedSessionId(params: Params): string {
    const id = sessionIdOf(params)
    const cwd = this.ctx.sessions.headerOf(id)?.cwd
    if (cwd === undefined || (!this.all && resolve(cwd) !== resolve(this.cwd))) {
      throw new RpcFailure('not-found', `no session with id ${id}`)
    }
    return id
  }

  inScope(session: Session): boolean {
    return this.all || resolve(session.header.cwd) === resolve(this.cwd)
  }

  /** A turn runs in the session: one this host started, or its agent's own. */
  running(id: string): boolean {
    return this.states.running(id) || this.ctx.agents.get(id)?.status === 'running'
  }

  /** The agent this host holds for a session, resuming a persisted one on first use. */
  agentFor(sessionId: string): Agent {
    const held = this.held.get(sessionId)
    if (held) return held
    if (this.ctx.agents.get(sessionId)) {
      throw new RpcFailure(
        'read-only',
        `session ${sessionId} is driven by another agent in this process (a running subagent); prompt its parent`,
      )
    }
    let agent: Agent
    try {
      agent = this.ctx.agents.resume(sessionId, { model: this.model }).agent
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw new RpcFailure('not-found', `no session with id ${sessionId}`)
      throw error
    }
    if (agent.session.header.parent) {
      this.ctx.agents.close(agent)
      throw new RpcFailure(
        'read-only',
        `session ${sessionId} belongs to a subagent; prompt its parent session ${agent.session.header.parent.sessionId}`,
      )
    }
    this.held.add(agent)
    return agent
  }

  /** A log event as the page gets it: a tool call carries its tool's presentation. */
  entry(event: SessionEvent): HistoryEntry {
    if (event.type !== 'tool/call') return { event }
    return { event, view: this.view(event.data.name, event.data.arguments) }
  }

  private view(name: string, args: string): CallView | undefined {
    try {
      const { title, kind, locations } = this.ctx.tools.present(name, args)
      return { title: String(title), kind: String(kind), ...(locations ? { locations } : {}) }
    } catch {
      return undefined
    }
  }

  info(summary: SessionSummary): SessionInfo {
    return {
      id: summary.id,
      title: summary.title,
      cwd: summary.cwd,
      createdAt: summary.createdAt,
      updatedAt: summary.updatedAt,
      ...(summary.parent ? { parent: summary.parent } : {}),
      ...(summary.forkedFrom ? { forkedFrom: summary.forkedFrom } : {}),
      ...(summary.host ? { host: summary.host } : {}),
      live: this.held.has(summary.id),
      running: this.states.running(summary.id),
    }
  }

  infoOfHeader(header: SessionHeader): SessionInfo {
    return {
      id: header.id,
      title: '',
      cwd: header.cwd,
      createdAt: header.createdAt,
      updatedAt: Date.now(),
      ...(header.parent ? { parent: header.parent } : {}),
      ...(header.forkedFrom ? { forkedFrom: header.forkedFrom } : {}),
      live: this.held.has(header.id),
      running: this.states.running(header.id),
    }
  }
}
