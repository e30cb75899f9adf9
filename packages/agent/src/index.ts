import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { LlmAdapter, LlmRequest } from '@keel/llm'
import type { Session } from '@keel/session'
import { loadInstructions } from '@keel/settings'
import { Agent, type AgentDelta, type AgentOptions, type AgentStatus } from './agent.ts'
import type { QueuedPrompt } from './queue.ts'

export * from './agent.ts'
export type { QueueKind, QueuedPrompt } from './queue.ts'
export { lastModel, lastModelChoice, modelSpecOf, openForResume } from './model-choice.ts'
export { systemPrompt } from './prompt.ts'
export type { HookedAgent, HookedCall, PreToolVerdict, TurnHooks } from './hooks.ts'

declare module 'cordis' {
  interface Context {
    agents: AgentRegistry
  }
  interface Events {
    /**
     * Live output (text, reasoning, tool input and tool output as it streams). Not logged.
     * @mode emit
     */
    'agent/delta'(agent: Agent, delta: AgentDelta): void
    /**
     * The agent's system prompt is being built (once, at its first request): listeners push sections that follow it
     * (the skills' names and descriptions). The text is then kept, so the prompt cache's prefix holds.
     * @mode emit
     */
    'agent/system'(agent: Agent, sections: string[]): void
    /**
     * The agent went idle, started running, or was disposed.
     * @mode emit
     */
    'agent/status'(agent: Agent, status: AgentStatus): void
    /**
     * The agent's prompt queue changed (a prompt queued, edited, taken back or delivered): the whole queue now.
     * @mode emit
     */
    'agent/queue'(agent: Agent, items: readonly QueuedPrompt[]): void
    /**
     * Before each model request is built; listeners may append to the session (compaction does). Awaited.
     * @mode parallel
     */
    'agent/prepare'(agent: Agent, signal: AbortSignal): Promise<void>
    /**
     * Before a batch of tool calls is logged and run, with the tools' names. Awaited: a listener holds back tools
     * until work it started at `agent/prepare` is done (checkpoint waits until git has read the work tree, so no
     * tool changes a file before the state it would restore is captured).
     * @mode parallel
     */
    'agent/before-tools'(agent: Agent, tools: readonly string[], signal: AbortSignal): Promise<void>
    /**
     * Before `turn/end` is written, however the turn ends. Awaited; what a listener appends lands inside the turn.
     * @mode parallel
     */
    'agent/before-turn-end'(agent: Agent): Promise<void>
    /**
     * Before a door closes an agent for good (`ctx.agents.closeAtExit`: every door as it exits): work that outlived
     * the turn may finish first (a checkpoint's last re-check). Awaited; each listener bounds its own wait.
     * @mode parallel
     */
    'agent/before-close'(agent: Agent): Promise<void>
    /**
     * The request is built and about to be sent. Listeners may replace entries of `request.messages` (a fresh array)
     * to change what the model sees, never what the log holds: compaction cuts an oversized tool result here.
     * @mode emit
     */
    'agent/request'(agent: Agent, request: LlmRequest): void
  }
}

export interface CreateAgentOptions extends Omit<AgentOptions, 'session'> {
  sessionId?: string
  parent?: { sessionId: string; callId: string }
  persist?: boolean
  /**
   * Write the session file now instead of with the first event (the default, so opening a UI and leaving makes no
   * empty session). The web host creates files at once: its "new session" is listed and reopened like any other.
   */
  fileNow?: boolean
}

/** `ctx.agents`: makes agents over new or reopened sessions and tracks the live ones. */
export class AgentRegistry extends Service {
  private readonly live = new Map<string, Agent>()

  constructor(
    ctx: Context,
    readonly config: Config = { maxSteps: 200 },
  ) {
    super(ctx, 'agents', true)
    ctx.on('dispose', () => {
      for (const agent of this.live.values()) agent.dispose()
    })
  }

  /** A new agent; its project instructions are read now (for `cwd`) unless given, as a subagent passes its parent's. */
  create(options: CreateAgentOptions): Agent {
    const session = this.ctx.sessions.create({
      cwd: options.cwd,
      id: options.sessionId,
      parent: options.parent,
      persist: options.persist,
      deferFile: !options.fileNow,
    })
    return this.adopt(session, { ...options, instructions: options.instructions ?? loadInstructions(options.cwd) })
  }

  /** Reopens a persisted session (repairing a crash) and continues its numbering and history. */
  resume(
    id: string,
    options: Omit<CreateAgentOptions, 'cwd' | 'sessionId'> & { cwd?: string },
  ): { agent: Agent; repairs: string[] } {
    const { session, repairs } = this.ctx.sessions.open(id)
    const cwd = options.cwd ?? session.header.cwd
    return {
      agent: this.adopt(session, { ...options, cwd, instructions: options.instructions ?? loadInstructions(cwd) }),
      repairs,
    }
  }

  get(id: string): Agent | undefined {
    return this.live.get(id)
  }

  /**
   * Closes an agent for good, as its door exits: work that outlived its turn (a checkpoint's last re-check) may land
   * on its log first (`agent/before-close`, each listener bounded), then `close`.
   */
  async closeAtExit(agent: Agent): Promise<void> {
    await this.ctx.parallel('agent/before-close', agent).catch(() => {})
    this.close(agent)
  }

  /** Disposes the agent and closes its session (flushing the file, releasing the lock). */
  close(agent: Agent): void {
    agent.dispose()
    this.live.delete(agent.id)
    this.ctx.sessions.close(agent.session)
    this.ctx.emit('agent/status', agent, 'disposed')
  }

  private adopt(session: Session, options: Omit<AgentOptions, 'session'>): Agent {
    const agent = new Agent(this.ctx, { maxSteps: this.config.maxSteps, ...options, session })
    this.live.set(agent.id, agent)
    return agent
  }
}

export type { LlmAdapter }

export const name = 'keel-agent'
export const inject = ['sessions', 'tools', 'llm']
export interface Config {
  maxSteps: number
}
export const Config: Schema<Config> = Schema.object({
  maxSteps: Schema.natural()
    .min(1)
    .default(200)
    .description('Steps (model requests) one turn may take before it ends with reason step-limit.'),
})

export function apply(ctx: Context, config: Config): void {
  ctx.plugin(AgentRegistry, config)
  // A model switch is recorded when no turn runs (see Agent.switchModel).
  ctx.inject(['invariants'], (ctx) => ctx.invariants.allowBetweenTurns('session/model'))
}
