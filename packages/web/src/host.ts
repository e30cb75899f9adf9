import type { Context } from 'cordis'
import type { Hono } from 'hono'
import type { LlmAdapter } from '@keel/agent'
import type { NotifySettings } from '@keel/door/call-back'
import { onNotice, type Notice } from '@keel/session'
import { feedOf } from '@keel/store-pg'
import type { SubagentService } from '@keel/subagent'
import { AllowedHosts } from './access.ts'
import { WebAsks } from './asks.ts'
import { EventHub } from './events.ts'
import { MAX_NOTICES, type RpcMethod, type RpcMethods, type RpcResult, type ServerFrame } from './protocol.ts'
import { routes } from './routes.ts'
import { RpcFailure } from './rpc/failure.ts'
import { callMethod } from './rpc/methods.ts'
import { queuedItem } from './rpc/queue.ts'
import { RemoteSessions } from './remote.ts'
import { Served } from './served.ts'

export interface WebHostOptions {
  /** The booted context; without it (and `model`) the host waits for `attach()`, serving the page meanwhile. */
  ctx?: Context
  /** Sessions of this directory are listed and served; new sessions work here. */
  cwd: string
  /** Serve the sessions of every working directory (`keel serve --all`), each resumed in its own directory. */
  all?: boolean
  /** The model that new and resumed sessions use. */
  model?: LlmAdapter
  token: string
  /** Serve the built client from this folder; without it the host answers the API only. */
  clientDir?: string
  /** Idle sessions beyond this many are closed, least recently used first (default 16). */
  maxOpenSessions?: number
  /** A session unused for this long is closed (default 10 minutes); the next use reopens it. */
  idleCloseMs?: number
  /** The settings' `notify` and `notifyWhen` (with `ctx`; otherwise given to `attach()`): sent to the page in `hello`. */
  notify?: NotifySettings
}

export const DEFAULT_MAX_OPEN_SESSIONS = 16
export const DEFAULT_IDLE_CLOSE_MS = 10 * 60_000

/**
 * The `keel serve` host: its routes (routes.ts) answer RPC methods (rpc/) and stream live frames; prompts run on
 * agents this host holds (served.ts), one running turn per session. This class is the lifecycle: attach, listen, close.
 */
export class WebHost {
  readonly app: Hono
  readonly hub = new EventHub()
  private served: Served | undefined
  /** The plugins' notices of this run, the latest `MAX_NOTICES`: a page that connects later sees them too. */
  private notices: Notice[] = []
  /** Resolved by attach(): until then the page is served and the API waits. */
  private readonly attached: Promise<void>
  private markAttached!: () => void
  private hosts: AllowedHosts | undefined
  private readonly disposers: (() => void)[] = []
  private closed = false
  private notify: NotifySettings = {}

  constructor(private readonly options: WebHostOptions) {
    this.attached = new Promise((done) => {
      this.markAttached = done
    })
    this.app = routes({
      token: options.token,
      clientDir: options.clientDir,
      hosts: () => this.hosts,
      attached: this.attached,
      hub: this.hub,
      hello: () => this.hello(),
      call: (method, params) => this.call(method, params),
    })
    if (options.ctx && options.model) this.attach(options.ctx, options.model, options.notify)
  }

  /**
   * Hands the host the booted context and the model: `keel serve` listens and serves its page while the plugins
   * boot (serve.ts), and the API answers from here on (requests that came meanwhile were held, not refused).
   * `notify`: the loaded settings' call-back choices, which the page follows (`hello`).
   */
  attach(ctx: Context, model: LlmAdapter, notify: NotifySettings = {}): void {
    if (this.served) throw new Error('the web host is attached already')
    this.notify = notify
    const asks = new WebAsks(ctx, (frame) => this.hub.broadcast(frame))
    const served = new Served({
      ctx,
      model,
      asks,
      hub: this.hub,
      cwd: this.options.cwd,
      all: this.options.all === true,
      maxOpen: Math.max(1, this.options.maxOpenSessions ?? DEFAULT_MAX_OPEN_SESSIONS),
      idleMs: this.options.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS,
    })
    this.served = served
    const feed = feedOf(ctx.sessions)
    if (feed) {
      const remote = new RemoteSessions(served, feed)
      served.remote = remote
      this.disposers.push(() => remote.close())
    }
    this.disposers.push(
      ctx.on('session/event', (session, event) => {
        if (this.hub.size && served.inScope(session))
          this.hub.broadcast({ type: 'session/event', sessionId: session.id, ...served.entry(event) })
      }),
      ctx.on('agent/delta', (agent, delta) => {
        if (served.inScope(agent.session)) this.hub.broadcast({ type: 'agent/delta', sessionId: agent.id, delta })
      }),
      ctx.on('permission/mode', (mode) => this.hub.broadcast({ type: 'permission/mode', mode })),
      ctx.on('agent/queue', (agent, items) => {
        if (!served.inScope(agent.session)) return
        this.hub.broadcast({ type: 'agent/queue', sessionId: agent.id, items: items.map(queuedItem) })
      }),
      ctx.on('agent/status', (agent, status) => {
        if (served.inScope(agent.session)) this.hub.broadcast({ type: 'agent/status', sessionId: agent.id, status })
      }),
      onNotice(ctx, (notice) => {
        this.notices = [...this.notices, notice].slice(-MAX_NOTICES)
        this.hub.broadcast({ type: 'notice', notice })
      }),
    )
    // Optional plugins, reached through their typed service declarations; absent when not composed.
    const subagents: SubagentService | undefined = ctx.get('subagents')
    const projections = ctx.get('projections')
    if (projections) {
      this.disposers.push(
        projections.onChanged((session, key, value, seq) => {
          // With ctx.subagents composed, its own feed carries subagentPlans with running children's live plans overlaid.
          if ((key === 'subagentPlans' && subagents) || !served.inScope(session)) return
          this.hub.broadcast({ type: 'session/projection', sessionId: session.id, key, value, seq })
        }),
      )
    }
    if (subagents) {
      this.disposers.push(
        subagents.onChanged((session, key, value, seq) => {
          if (served.inScope(session))
            this.hub.broadcast({ type: 'session/projection', sessionId: session.id, key, value, seq })
        }),
      )
    }
    this.markAttached()
  }

  /**
   * Tells the host where it listens: requests must name it (`Host`: the bound address or a loopback name, with this
   * port, or one of `extraHosts`).
   */
  listening(bindHost: string, port: number, extraHosts: readonly string[] = []): void {
    this.hosts = new AllowedHosts(bindHost, port, extraHosts)
  }

  /** How many sessions this host holds open (each holds its log file and lock). */
  get openSessions(): number {
    return this.served?.held.size ?? 0
  }

  /** Ends the event streams, cancels running turns and `!command`s (waiting up to `graceMs`), and closes the agents this host opened. */
  async close(graceMs = 5000): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.hub.close()
    const served = this.served
    if (served) {
      const working = served.states.working()
      for (const { id, state } of working)
        if (state.kind === 'turn') served.ctx.agents.get(id)?.cancel()
        else state.abort.abort(new Error('cancelled'))
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([
        Promise.allSettled(working.map(({ state }) => state.done)),
        new Promise((done) => {
          timer = setTimeout(done, graceMs)
        }),
      ])
      clearTimeout(timer)
      // Cancelled turns ended their asks; anything still waiting is declined.
      served.asks.close()
      const held = served.held.values()
      served.held.clear()
      await Promise.all(held.map((agent) => served.ctx.agents.closeAtExit(agent).catch(() => {})))
    }
    for (const dispose of this.disposers.splice(0)) dispose()
  }

  /** Calls one RPC method directly (the HTTP route and tests share it). */
  call<M extends RpcMethod>(method: M, params: unknown): Promise<RpcResult<RpcMethods[M]['value']>> {
    return callMethod(method, params, () => {
      if (this.closed) throw new RpcFailure('unavailable', 'the server is shutting down')
      if (!this.served) throw new RpcFailure('unavailable', 'keel is still starting')
      return this.served
    })
  }

  private hello(): ServerFrame {
    const served = this.served
    if (!served) throw new RpcFailure('unavailable', 'keel is still starting')
    return {
      type: 'hello',
      sessions: served.ctx.sessions
        .liveSessions()
        .filter((session) => served.inScope(session))
        .map((session) => ({
          sessionId: session.id,
          lastSeq: session.seq - 1,
          running: served.states.running(session.id),
        }))
        .concat(served.remote?.followed() ?? []),
      ...(this.notices.length ? { notices: this.notices } : {}),
      notify: this.notify,
    }
  }
}
