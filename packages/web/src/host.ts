import { resolve } from 'node:path'
import type { Context } from 'cordis'
import { Hono, type Context as HonoContext } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import type { Agent, LlmAdapter } from '@keel/agent'
import {
  performRewind,
  previewRewind,
  REWIND_SCOPES,
  RewindConflictError,
  RewindError,
  turnPrompts,
  type CheckpointService,
  type RewindScope,
  type TurnPrompt,
} from '@keel/checkpoint'
import { isPermissionAnswer, isPermissionMode, MODE_CYCLE } from '@keel/permissions'
import type { Compaction } from '@keel/compaction'
import type { SubagentService } from '@keel/subagent'
import {
  errorLine,
  isSessionId,
  type Notice,
  onNotice,
  type Session,
  type SessionEvent,
  type SessionHeader,
  type SessionSummary,
} from '@keel/session'
import { AllowedHosts, checkHost, checkOrigin, tokenCookieName, type AccessRefusal } from './access.ts'
import { readBodyLimited } from './body.ts'
import { WebAsks } from './asks.ts'
import { EventHub } from './events.ts'
import { HeldAgents } from './held.ts'
import { pageOfEvents, pageOfFile, PageRequestError, standingPlanOfFile } from './history.ts'
import {
  DEFAULT_PAGE_MESSAGES,
  MAX_NOTICES,
  MAX_PAGE_MESSAGES,
  type CallView,
  type HistoryEntry,
  type HistoryPage,
  type ModelInfo,
  type ProjectionsBlock,
  type RpcError,
  type RpcErrorCode,
  type RpcMethod,
  type RpcMethods,
  type RpcResult,
  type RewindDone,
  type RewindPreviewInfo,
  type ServerFrame,
  type SessionInfo,
} from './protocol.ts'
import { sessionFileCwd } from './scope.ts'
import { clientFile, SECURITY_HEADERS } from './static.ts'
import { requestToken, tokenMatches } from './token.ts'
import { usageOfEvents, usageOfFile } from './usage.ts'

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
}

export const DEFAULT_MAX_OPEN_SESSIONS = 16
export const DEFAULT_IDLE_CLOSE_MS = 10 * 60_000

export class RpcFailure extends Error {
  constructor(
    readonly code: RpcErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'RpcFailure'
  }
}

const MAX_BODY_BYTES = 1024 * 1024
const MAX_PROMPT_CHARS = 200_000

/**
 * The `keel serve` host: JSON RPC under `/api/<method>`, a server-sent event stream of live frames at `/api/events`,
 * and the built client. Prompts run on agents this host holds, one running turn per session.
 */
export class WebHost {
  readonly app: Hono
  readonly hub = new EventHub()
  private asksOf: WebAsks | undefined
  private booted: { ctx: Context; model: LlmAdapter } | undefined
  /** The plugins' notices of this run, the latest `MAX_NOTICES`: a page that connects later sees them too. */
  private notices: Notice[] = []
  /** Resolved by attach(): until then the page is served and the API waits. */
  private readonly attached: Promise<void>
  private markAttached!: () => void
  private readonly held: HeldAgents
  private readonly turns = new Map<string, Promise<unknown>>()
  /** Sessions with a manual compaction in flight or waiting for the next request: their agent holds it, so stays open. */
  private readonly compacting = new Set<string>()
  /** Sessions with a rewind in flight: no prompt starts there until it is done. */
  private readonly rewinding = new Set<string>()
  /** Known once the server listens; until then every request is refused. */
  private hosts: AllowedHosts | undefined
  private readonly disposers: (() => void)[] = []
  private closed = false

  constructor(private readonly options: WebHostOptions) {
    this.attached = new Promise((done) => {
      this.markAttached = done
    })
    this.held = new HeldAgents({
      maxOpen: Math.max(1, options.maxOpenSessions ?? DEFAULT_MAX_OPEN_SESSIONS),
      idleMs: options.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS,
      busy: (agent) =>
        this.turns.has(agent.id) ||
        agent.status === 'running' ||
        this.compacting.has(agent.id) ||
        this.rewinding.has(agent.id),
      close: (agent) => this.ctx.agents.close(agent),
    })
    this.app = this.routes()
    if (options.ctx && options.model) this.attach(options.ctx, options.model)
  }

  /**
   * Hands the host the booted context and the model: `keel serve` listens and serves its page while the plugins
   * boot (serve.ts), and the API answers from here on (requests that came meanwhile were held, not refused).
   */
  attach(ctx: Context, model: LlmAdapter): void {
    if (this.booted) throw new Error('the web host is attached already')
    this.booted = { ctx, model }
    this.disposers.push(
      ctx.on('session/event', (session, event) => {
        if (this.hub.size && this.sessionInScope(session))
          this.hub.broadcast({ type: 'session/event', sessionId: session.id, ...this.entry(event) })
      }),
      ctx.on('agent/delta', (agent, delta) => {
        if (this.sessionInScope(agent.session)) this.hub.broadcast({ type: 'agent/delta', sessionId: agent.id, delta })
      }),
      ctx.on('permission/mode', (mode) => this.hub.broadcast({ type: 'permission/mode', mode })),
      ctx.on('agent/status', (agent, status) => {
        if (this.sessionInScope(agent.session))
          this.hub.broadcast({ type: 'agent/status', sessionId: agent.id, status })
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
          if ((key === 'subagentPlans' && subagents) || !this.sessionInScope(session)) return
          this.hub.broadcast({ type: 'session/projection', sessionId: session.id, key, value, seq })
        }),
      )
    }
    if (subagents) {
      this.disposers.push(
        subagents.onChanged((session, key, value, seq) => {
          if (this.sessionInScope(session))
            this.hub.broadcast({ type: 'session/projection', sessionId: session.id, key, value, seq })
        }),
      )
    }
    this.asksOf = new WebAsks(ctx, (frame) => this.hub.broadcast(frame))
    this.markAttached()
  }

  private get ctx(): Context {
    if (!this.booted) throw new RpcFailure('unavailable', 'keel is still starting')
    return this.booted.ctx
  }

  private get asks(): WebAsks {
    if (!this.asksOf) throw new RpcFailure('unavailable', 'keel is still starting')
    return this.asksOf
  }

  private get model(): LlmAdapter {
    if (!this.booted) throw new RpcFailure('unavailable', 'keel is still starting')
    return this.booted.model
  }

  /**
   * Tells the host where it listens: requests must name it (`Host`: the bound address or a loopback name, with this
   * port, or one of `extraHosts`), and the page's token cookie is named after the port.
   */
  listening(bindHost: string, port: number, extraHosts: readonly string[] = []): void {
    this.hosts = new AllowedHosts(bindHost, port, extraHosts)
  }

  /** How many sessions this host holds open (each holds its log file and lock). */
  get openSessions(): number {
    return this.held.size
  }

  /** Ends the event streams, cancels running turns (waiting up to `graceMs`), and closes the agents this host opened. */
  async close(graceMs = 5000): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.hub.close()
    for (const id of this.turns.keys()) this.ctx.agents.get(id)?.cancel()
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      Promise.allSettled([...this.turns.values()]),
      new Promise((done) => {
        timer = setTimeout(done, graceMs)
      }),
    ])
    clearTimeout(timer)
    // Cancelled turns ended their asks; anything still waiting is declined.
    this.asksOf?.close()
    const held = this.held.values()
    this.held.clear()
    for (const agent of held) {
      try {
        this.ctx.agents.close(agent)
      } catch {}
    }
    for (const dispose of this.disposers.splice(0)) dispose()
  }

  /** Calls one RPC method directly (the HTTP route and tests share it). */
  async call<M extends RpcMethod>(method: M, params: unknown): Promise<RpcResult<RpcMethods[M]['value']>> {
    try {
      const handler = this.methods[method] as
        | ((params: Record<string, unknown>) => Promise<RpcMethods[M]['value']> | RpcMethods[M]['value'])
        | undefined
      if (!handler || !Object.hasOwn(this.methods, method))
        throw new RpcFailure(
          'unknown-method',
          `unknown method ${JSON.stringify(String(method)).slice(0, 80)}; methods: ${Object.keys(this.methods).join(', ')}`,
        )
      if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
        throw new RpcFailure('bad-request', 'params must be a JSON object')
      }
      if (this.closed) throw new RpcFailure('unavailable', 'the server is shutting down')
      return { ok: true, value: await handler((params ?? {}) as Record<string, unknown>) }
    } catch (error) {
      return { ok: false, error: toRpcError(error) }
    }
  }

  private routes(): Hono {
    const app = new Hono()
    app.use('*', async (c, next) => {
      await next()
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        if (!c.res.headers.has(name)) c.res.headers.set(name, value)
    })
    // DNS rebinding: a page on a name its owner points at 127.0.0.1 would otherwise be served as this host.
    app.use('*', async (c, next) => {
      const refusal = checkHost(c.req.raw, this.hosts)
      if (refusal) return this.refuse(c, refusal)
      const method = c.req.method
      // Every state change — and everything under /api — must come from this host's own page (or a non-browser client).
      if ((method !== 'GET' && method !== 'HEAD') || c.req.path.startsWith('/api/')) {
        const cross = checkOrigin(c.req.raw, this.hosts!)
        if (cross) return this.refuse(c, cross)
      }
      await next()
    })
    app.use('/api/*', async (c, next) => {
      if (!tokenMatches(this.options.token, requestToken(c.req.raw, getCookie(c, this.cookieName())))) {
        return c.json(failure('unauthorized', 'missing or wrong token; open the URL that keel serve printed'), 401)
      }
      // Until the plugins are up (serve.ts listens before they boot) the API waits; the page itself does not.
      await this.attached
      await next()
    })
    app.get('/api/events', () => this.hub.open(this.hello()))
    app.post('/api/:method', async (c) => {
      const params = await readParams(c)
      if ('tooLarge' in params) {
        // Connection: close makes Node drop the socket after this answer instead of draining the rest of the body.
        c.header('connection', 'close')
        return c.json(failure('too-large', `request body over ${MAX_BODY_BYTES} bytes`), 413)
      }
      if ('error' in params) return c.json(failure('bad-request', params.error), 400)
      const result = await this.call(c.req.param('method') as RpcMethod, params.value)
      const status = !result.ok && result.error.code === 'unknown-method' ? 404 : 200
      return c.json(result, status)
    })
    app.all('/api/*', (c) =>
      c.json(failure('unknown-method', `no such endpoint: ${c.req.method} ${c.req.path.slice(0, 100)}`), 404),
    )
    const dir = this.options.clientDir
    app.get('*', (c) => {
      if (c.req.query('token') !== undefined) return this.bootstrap(c)
      return (dir && clientFile(dir, c.req.path)) || c.text('not found', 404)
    })
    return app
  }

  /**
   * The printed URL's `?token=` is good for one thing: trading it for an HttpOnly, SameSite=Strict cookie, then a
   * redirect to the same address without it, so it leaves the address bar and history. Reloads and new tabs send the
   * cookie.
   */
  private bootstrap(c: HonoContext): Response {
    if (!tokenMatches(this.options.token, c.req.query('token'))) {
      c.header('cache-control', 'no-store')
      return c.text(
        'This link carries a wrong or old token. Open the URL that keel serve printed (each start has a new one).',
        401,
      )
    }
    setCookie(c, this.cookieName(), this.options.token, { httpOnly: true, sameSite: 'Strict', path: '/' })
    const url = new URL(c.req.url)
    url.searchParams.delete('token')
    c.header('cache-control', 'no-store')
    // One leading slash: `//name` in a Location header would send the browser to another host.
    return c.redirect(`/${url.pathname.replace(/^[/\\]+/, '')}${url.search}`, 303)
  }

  private cookieName(): string {
    return tokenCookieName(this.hosts?.port ?? 0)
  }

  private refuse(c: HonoContext, refusal: AccessRefusal): Response {
    if (c.req.path.startsWith('/api/')) return c.json(failure('forbidden', refusal.message), refusal.status)
    return c.text(refusal.message, refusal.status)
  }

  private readonly methods: {
    [M in RpcMethod]: (params: Record<string, unknown>) => Promise<RpcMethods[M]['value']> | RpcMethods[M]['value']
  } = {
    'session.list': () => ({
      sessions: this.ctx.sessions
        .list(this.options.all ? undefined : this.options.cwd)
        .map((summary) => this.info(summary)),
      cwd: this.options.cwd,
      all: this.options.all === true,
    }),
    'session.create': () => {
      const agent = this.ctx.agents.create({ cwd: this.options.cwd, model: this.model, fileNow: true })
      this.held.add(agent)
      const session = this.infoOf(agent.session)
      this.hub.broadcast({ type: 'session/created', session })
      return { session }
    },
    'session.history': (params) => this.history(params),
    'session.prompt': (params) => this.prompt(params),
    'session.cancel': (params) => {
      const id = this.scopedSessionId(params)
      const running = this.turns.has(id)
      if (running) this.held.get(id)?.cancel()
      return { cancelled: running }
    },
    'permission.answer': (params) => {
      if (!this.asks.enabled)
        throw new RpcFailure('unavailable', 'permissions are not loaded (add @keel/permissions to the composition)')
      const callId = params.callId
      if (typeof callId !== 'string' || !callId || callId.length > 256)
        throw new RpcFailure('bad-request', 'callId must be a non-empty string')
      const { decision, scope, file, message } = params
      const answer = {
        decision,
        scope,
        ...(file !== undefined ? { file } : {}),
        ...(message !== undefined ? { message } : {}),
      }
      if (!isPermissionAnswer(answer))
        throw new RpcFailure(
          'bad-request',
          'an answer is { decision: allow | deny, scope: once | session | always, file?: local | project, message?: text }',
        )
      return { accepted: this.asks.answer(sessionIdOf(params), callId, answer) }
    },
    'permission.mode': (params) => {
      const permissions = this.ctx.get('permissions')
      if (!permissions)
        throw new RpcFailure('unavailable', 'permissions are not loaded (add @keel/permissions to the composition)')
      const offered = () =>
        MODE_CYCLE.includes(permissions.mode) ? [...MODE_CYCLE] : [...MODE_CYCLE, permissions.mode]
      if (params.mode !== undefined) {
        if (!isPermissionMode(params.mode) || !offered().includes(params.mode))
          throw new RpcFailure('bad-request', `mode must be one of ${offered().join(', ')}`)
        const held = typeof params.sessionId === 'string' ? this.held.get(this.scopedSessionId(params)) : undefined
        permissions.setMode(params.mode, held ? [held.session] : [])
      }
      return { mode: permissions.mode, modes: offered() }
    },
    'session.compact': async (params) => {
      const compaction: Compaction | undefined = this.ctx.get('compaction')
      if (!compaction)
        throw new RpcFailure('unavailable', 'compaction is not loaded (add @keel/compaction to the composition)')
      const agent = this.agentFor(this.scopedSessionId(params))
      // An idle compaction is committed at the agent's next request; closing the agent before then would drop it.
      this.compacting.add(agent.id)
      try {
        const result = await compaction.compact(agent)
        if (result.applied !== 'next-request') this.compacting.delete(agent.id)
        return result
      } catch (error) {
        this.compacting.delete(agent.id)
        throw error
      }
    },
    'session.rewindPreview': (params) => this.rewindPreview(params),
    'session.rewind': (params) => this.rewind(params),
  }

  /** The session, the prompt and the scope a rewind request names, each checked; the log read once. */
  private rewindTarget(params: Record<string, unknown>): {
    id: string
    header: SessionHeader
    events: readonly SessionEvent[]
    prompt: TurnPrompt
    scope: RewindScope
  } {
    const id = this.scopedSessionId(params)
    const seq = optionalInteger(params, 'seq', 0, Number.MAX_SAFE_INTEGER)
    if (seq === undefined) throw new RpcFailure('bad-request', 'seq must be the seq of a prompt (a user message)')
    const scope = params.scope
    if (typeof scope !== 'string' || !(REWIND_SCOPES as readonly string[]).includes(scope))
      throw new RpcFailure('bad-request', `scope must be one of ${REWIND_SCOPES.join(', ')}`)
    const { header, events } = this.ctx.sessions.read(id)
    if (header.parent)
      throw new RpcFailure(
        'read-only',
        `session ${id} belongs to a subagent; rewind its parent session ${header.parent.sessionId}`,
      )
    const prompt = turnPrompts(events).find((candidate) => candidate.messageSeq === seq)
    if (!prompt) throw new RpcFailure('bad-request', `seq ${seq} is not a prompt of session ${id}`)
    return { id, header, events, prompt, scope: scope as RewindScope }
  }

  private checkpoints(): CheckpointService | undefined {
    return this.ctx.get('checkpoints')
  }

  private async rewindPreview(params: Record<string, unknown>): Promise<RewindPreviewInfo> {
    const { id, header, events, prompt, scope } = this.rewindTarget(params)
    const preview = await previewRewind(
      this.checkpoints(),
      { id, cwd: header.cwd, events },
      { kind: 'turn', toTurn: prompt.turn, scope },
    )
    return {
      turn: prompt.turn,
      scope,
      ...(preview.plan
        ? {
            files: {
              changes: preview.plan.changes.map(({ status, path }) => ({ status, path })),
              conflicts: [...preview.plan.conflicts],
            },
          }
        : {}),
      fork: preview.forkBeforeSeq !== undefined,
    }
  }

  /**
   * Files go back through the session's agent here (it holds the writer lock, and `checkpoint/restore` is written on
   * it), so the session must be idle; a conversation-only rewind just forks, from memory or the file.
   */
  private async rewind(params: Record<string, unknown>): Promise<RewindDone> {
    const { id, header, events, prompt, scope } = this.rewindTarget(params)
    const overwrite = optionalPaths(params, 'overwrite')
    if (this.rewinding.has(id)) throw new RpcFailure('busy', 'a rewind of this session is already running')
    if (this.turns.has(id) || this.ctx.agents.get(id)?.status === 'running')
      throw new RpcFailure('busy', 'a turn is running in this session; wait for it to end or cancel it')
    this.rewinding.add(id)
    try {
      const session = scope === 'conversation' ? undefined : this.agentFor(id).session
      const preview = await previewRewind(
        this.checkpoints(),
        { id, cwd: header.cwd, events: session?.events ?? events },
        { kind: 'turn', toTurn: prompt.turn, scope },
      )
      // The conflicts the person saw and agreed to overwrite; any other one refuses (performRewind looks again).
      if (preview.plan) preview.plan = { ...preview.plan, conflicts: overwrite }
      const outcome = await performRewind({ checkpoints: this.checkpoints(), sessions: this.ctx.sessions }, preview, {
        session,
        force: overwrite.length > 0,
        forceHint: 'look at the list again before rewinding',
      })
      let fork: SessionInfo | undefined
      if (outcome.fork) {
        fork = { ...this.infoOfHeader(this.ctx.sessions.read(outcome.fork).header), title: titleOf(prompt, events) }
        this.hub.broadcast({ type: 'session/created', session: fork })
      }
      return {
        turn: prompt.turn,
        ...(fork ? { fork } : {}),
        changed: outcome.changes.length,
        overwrote: outcome.overwrote,
      }
    } finally {
      this.rewinding.delete(id)
    }
  }

  private history(params: Record<string, unknown>): HistoryPage {
    const sessionId = this.scopedSessionId(params)
    const beforeSeq = optionalInteger(params, 'beforeSeq', 0, Number.MAX_SAFE_INTEGER)
    const maxMessages = optionalInteger(params, 'maxMessages', 1, MAX_PAGE_MESSAGES) ?? DEFAULT_PAGE_MESSAGES
    const tail = beforeSeq === undefined
    const live = this.ctx.sessions.get(sessionId)
    if (live) {
      // One synchronous read of the in-memory log: the page and the projections describe the same instant.
      const page = pageOfEvents(live.events, { beforeSeq, maxMessages })
      const out: HistoryPage = { events: page.events.map((event) => this.entry(event)), hasMore: page.hasMore }
      if (tail) {
        out.projections = this.liveProjections(live)
        out.running = this.turns.has(sessionId) || this.ctx.agents.get(sessionId)?.status === 'running'
        out.model = this.modelInfo()
        out.usage = usageOfEvents(live.events)
        if (this.asks.enabled) out.asks = this.asks.pendingFor(sessionId)
      }
      return out
    }
    const path = this.ctx.sessions.pathOf(sessionId)
    if (!path) throw new RpcFailure('not-found', `no session with id ${sessionId}`)
    const page = pageOfFile(path, { beforeSeq, maxMessages })
    const out: HistoryPage = { events: page.events.map((event) => this.entry(event)), hasMore: page.hasMore }
    if (tail) {
      out.projections = this.fileProjections(path, page.lastSeq, page.events)
      out.running = false
      out.model = this.modelInfo()
      out.usage = usageOfFile(path, page.lastSeq)
    }
    return out
  }

  /** The window shown is the one compaction works against: its configured window first, else the model's. */
  private modelInfo(): ModelInfo {
    const { provider, model, contextWindow } = this.model
    const window = this.ctx.get('compaction')?.config.contextWindow || contextWindow
    return window ? { provider, model, contextWindow: window } : { provider, model }
  }

  private liveProjections(session: Session): ProjectionsBlock {
    const projections = this.ctx.get('projections')
    const block: ProjectionsBlock = projections
      ? (projections.snapshot(session) as ProjectionsBlock)
      : { asOfSeq: session.seq - 1, values: {} }
    const subagents = this.ctx.get('subagents')
    if (subagents && 'subagentPlans' in block.values)
      block.values = { ...block.values, subagentPlans: subagents.plans(session) }
    return block
  }

  /**
   * A session not open here is read from its file's tail, so only projections with a backwards rule are offered:
   * `todos`. Folding the others would mean reading the whole log; the client derives finished subagent plans from
   * the `subagent/end` events it holds instead.
   */
  private fileProjections(path: string, lastSeq: number, page: readonly SessionEvent[]): ProjectionsBlock {
    const projections = this.ctx.get('projections')
    const values: ProjectionsBlock['values'] = {}
    if (projections?.has('todos')) values.todos = standingPlanOfFile(path, lastSeq, page).todos
    return { asOfSeq: lastSeq, values }
  }

  private prompt(params: Record<string, unknown>): { accepted: true } {
    const sessionId = this.scopedSessionId(params)
    const text = params.text
    if (typeof text !== 'string' || !text.trim()) throw new RpcFailure('bad-request', 'text must be a non-empty string')
    if (text.length > MAX_PROMPT_CHARS)
      throw new RpcFailure('bad-request', `text is ${text.length} characters; the limit is ${MAX_PROMPT_CHARS}`)
    if (this.turns.has(sessionId))
      throw new RpcFailure('busy', 'a turn is already running in this session; wait for it to end or cancel it')
    if (this.rewinding.has(sessionId)) throw new RpcFailure('busy', 'a rewind of this session is running')
    const agent = this.agentFor(sessionId)
    if (agent.status === 'running') throw new RpcFailure('busy', 'a turn is already running in this session')
    const turn = agent.prompt(text).catch((error: unknown) => {
      this.ctx.emit(
        this.ctx,
        'internal/warning',
        `web: prompt in ${sessionId} failed: ${(error as Error)?.message ?? error}`,
      )
    })
    this.turns.set(sessionId, turn)
    this.compacting.delete(sessionId)
    void turn.finally(() => {
      if (this.turns.get(sessionId) === turn) this.turns.delete(sessionId)
    })
    return { accepted: true }
  }

  /** The agent this host holds for a session, resuming a persisted one on first use. */
  private agentFor(sessionId: string): Agent {
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
      if ((error as Error)?.name === 'SessionNotFoundError')
        throw new RpcFailure('not-found', `no session with id ${sessionId}`)
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

  /**
   * The session id of a request, if this host serves that session: one of its working directory, or any with `--all`.
   * Any other is answered exactly like an id with no session, so the API does not tell which exist elsewhere.
   */
  private scopedSessionId(params: Record<string, unknown>): string {
    const id = sessionIdOf(params)
    const live = this.ctx.sessions.get(id)
    const path = live ? undefined : this.ctx.sessions.pathOf(id)
    const cwd = live ? live.header.cwd : path ? sessionFileCwd(path) : undefined
    if (cwd === undefined || (!this.options.all && resolve(cwd) !== resolve(this.options.cwd))) {
      throw new RpcFailure('not-found', `no session with id ${id}`)
    }
    return id
  }

  private sessionInScope(session: Session): boolean {
    return this.options.all === true || resolve(session.header.cwd) === resolve(this.options.cwd)
  }

  private hello(): ServerFrame {
    return {
      type: 'hello',
      sessions: this.ctx.sessions
        .liveSessions()
        .filter((session) => this.sessionInScope(session))
        .map((session) => ({
          sessionId: session.id,
          lastSeq: session.seq - 1,
          running: this.turns.has(session.id),
        })),
      ...(this.notices.length ? { notices: this.notices } : {}),
    }
  }

  private entry(event: SessionEvent): HistoryEntry {
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

  private info(summary: SessionSummary): SessionInfo {
    return {
      id: summary.id,
      title: summary.title,
      cwd: summary.cwd,
      createdAt: summary.createdAt,
      updatedAt: summary.updatedAt,
      ...(summary.parent ? { parent: summary.parent } : {}),
      ...(summary.forkedFrom ? { forkedFrom: summary.forkedFrom } : {}),
      live: this.held.has(summary.id),
      running: this.turns.has(summary.id),
    }
  }

  private infoOf(session: Session): SessionInfo {
    return this.infoOfHeader(session.header)
  }

  private infoOfHeader(header: SessionHeader): SessionInfo {
    return {
      id: header.id,
      title: '',
      cwd: header.cwd,
      createdAt: header.createdAt,
      updatedAt: Date.now(),
      ...(header.parent ? { parent: header.parent } : {}),
      ...(header.forkedFrom ? { forkedFrom: header.forkedFrom } : {}),
      live: this.held.has(header.id),
      running: this.turns.has(header.id),
    }
  }
}

function failure(code: RpcErrorCode, message: string): RpcResult<never> {
  return { ok: false, error: { code, message } }
}

function toRpcError(error: unknown): RpcError {
  if (error instanceof RpcFailure) return { code: error.code, message: error.message }
  if (error instanceof PageRequestError) return { code: 'bad-request', message: error.message }
  if (error instanceof RewindConflictError) return { code: 'conflict', message: errorLine(error) }
  // No checkpoints for that turn, checkpoints off in that directory, or git failing: the files cannot go back.
  if (error instanceof RewindError) return { code: 'unavailable', message: errorLine(error) }
  const name = (error as Error)?.name
  const message = errorLine(error)
  if (name === 'SessionNotFoundError') return { code: 'not-found', message }
  if (name === 'SessionLockedError') return { code: 'busy', message }
  return { code: 'internal', message }
}

function sessionIdOf(params: Record<string, unknown>): string {
  const id = params.sessionId
  if (!isSessionId(id)) {
    const shown =
      typeof id === 'string' ? JSON.stringify(id.slice(0, 80)) : id === undefined ? 'nothing' : `a ${typeof id}`
    throw new RpcFailure(
      'invalid-session-id',
      `sessionId must be a session id (letters, digits, - and _), got ${shown}`,
    )
  }
  return id
}

function optionalInteger(params: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const value = params[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RpcFailure('bad-request', `${key} must be an integer from ${min} to ${max}`)
  }
  return value
}

/** A list of file paths (the conflicts a person agreed to overwrite); none when absent. */
function optionalPaths(params: Record<string, unknown>, key: string): string[] {
  const value = params[key]
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.length > 100_000 || !value.every((p) => typeof p === 'string' && p.length <= 4096))
    throw new RpcFailure('bad-request', `${key} must be a list of file paths`)
  return value as string[]
}

/** A fork's title, as the list would show it: its first prompt (the original's, unless it forked before turn 1). */
function titleOf(prompt: TurnPrompt, events: readonly SessionEvent[]): string {
  const first = turnPrompts(events).find((candidate) => candidate.startSeq < prompt.startSeq)
  return (first?.text ?? '').replace(/\s+/g, ' ').trim().slice(0, 120)
}

async function readParams(c: HonoContext): Promise<{ value: unknown } | { error: string } | { tooLarge: true }> {
  const body = await readBodyLimited(c.req.raw, MAX_BODY_BYTES)
  if ('tooLarge' in body) return body
  const text = body.text
  if (!text.trim()) return { value: {} }
  try {
    return { value: JSON.parse(text) }
  } catch {
    return { error: 'request body is not JSON' }
  }
}
