import { type Context, Service } from 'cordis'
import type { Agent, LlmAdapter, TurnResult } from '@keel/agent'
import { errorLine, notify, type Session, type SessionEvent } from '@keel/session'
import { sessionCost } from '@keel/session/cost'
import { standingPlan } from '@keel/todo'
import { defineTool, type ToolAgent, type ToolExecution, type ToolOutput, Type } from '@keel/tools'
import { type AgentDefinition, definitionModel, loadAgents, toolNames } from '@keel/extend'
import { systemPrompt } from '@keel/agent'
import { trustState } from '@keel/settings'
import { describeTask, resultOf } from './describe.ts'
import { subagentPlansProjection } from './projection.ts'
import { Slots } from './slots.ts'
import type { SubagentPlan, SubagentPlans } from './types.ts'

declare module 'cordis' {
  interface Context {
    subagents: SubagentService
  }
}

export interface SubagentConfig {
  maxDepth: number
  maxConcurrent: number
  model?: string
}

export const TaskParameters = Type.Object(
  {
    description: Type.String({ description: 'A short label for the task (3 to 5 words), shown to the user.' }),
    prompt: Type.String({ description: 'The complete, self-contained instructions for the subagent.' }),
  },
  { additionalProperties: false },
)

/** `task` with an `agent` to name, offered only when agent definitions exist (the schema is otherwise unchanged). */
const TaskWithAgent = Type.Object(
  {
    ...TaskParameters.properties,
    agent: Type.Optional(
      Type.String({
        description: 'The name of an agent definition to run the task with (listed above); omit for a general agent.',
      }),
    ),
  },
  { additionalProperties: false },
)

/** Called with the parent session and its plans overlaid with the children's live plans; same shape as a projection listener. */
export type SubagentPlansListener = (session: Session, key: 'subagentPlans', value: SubagentPlans, seq: number) => void

/**
 * The calling agent as `task` needs it. `ToolAgent` is structural and has no model, so the model is checked at run
 * time rather than cast blindly; a Keel `Agent` always has one.
 */
interface ParentAgent extends ToolAgent {
  readonly model: LlmAdapter
  readonly options?: { readonly excludeTools?: readonly string[] }
  /** The parent's project instructions: the child's system prompt carries the same ones. */
  readonly instructions?: Agent['instructions']
}

function asParent(agent: ToolAgent | undefined): ParentAgent | undefined {
  const model = (agent as Partial<ParentAgent> | undefined)?.model
  return agent && model && typeof model.stream === 'function' ? (agent as ParentAgent) : undefined
}

/**
 * `ctx.subagents`: owns the `task` tool and the `subagentPlans` projection (both effects of this plugin), runs
 * children, and serves the parent's view of its children's live plans.
 *
 * The log stays the source of truth: each child's plan lives only in the child's session; the parent's log records
 * that a child started and how it ended (with its final plan). `plans()` overlays a running child's standing plan,
 * read from the child's live session, onto the parent's projection; nothing is kept here that a log does not hold.
 */
export class SubagentService extends Service {
  private readonly slots = new Map<string, Slots>()
  private readonly children = new Map<string, { agent: Agent; exec: ToolExecution }>()
  private readonly listeners = new Set<SubagentPlansListener>()
  private modelPromise: Promise<LlmAdapter> | undefined

  constructor(
    ctx: Context,
    readonly config: SubagentConfig,
  ) {
    super(ctx, 'subagents', true)
    ctx.tools.register(this.tool())
    ctx.projections.register(subagentPlansProjection)
    ctx.inject(['invariants'], (ctx) => {
      ctx.invariants.register('subagent', (event, trace) => {
        if (event.type !== 'subagent/start' && event.type !== 'subagent/end') return undefined
        return trace.pendingCalls.has(event.data.callId)
          ? undefined
          : `${event.type} names call ${event.data.callId}, which has no open tool/call in this step`
      })
    })
    ctx.on('session/event', (session, event) => this.observe(session, event))
    ctx.projections.onChanged((session, key, _value, seq) => {
      if (key === 'subagentPlans') this.notify(session, seq)
    })
    // Disposing the plugin must leave nothing running: each child's task call then ends it and closes it.
    ctx.on('dispose', () => {
      for (const { agent } of this.children.values()) agent.cancel()
    })
  }

  /** Children running now (all parents). */
  get running(): number {
    return this.children.size
  }

  /**
   * The parent's children for the current turn, each with its plan: the final one for a finished child (from the
   * parent's log), the live standing plan for a running one (from the child's session).
   */
  plans(parent: Session): SubagentPlans {
    const base = this.ctx.projections.get(parent, 'subagentPlans') ?? {}
    let out: Record<string, SubagentPlan> | undefined
    for (const [callId, run] of Object.entries(base)) {
      if (run.status !== 'running') continue
      const child = this.ctx.sessions.get(run.sessionId)
      if (!child) continue
      const todos = standingPlan(child.events)
      if (todos === run.todos) continue
      out ??= { ...base }
      out[callId] = Object.freeze({ ...run, todos })
    }
    return out ? Object.freeze(out) : base
  }

  /** Live updates of `plans(parent)`: on the parent's `subagent/*` events and on each child's plan change. */
  onChanged(listener: SubagentPlansListener): () => void {
    return this.ctx.effect(() => {
      this.listeners.add(listener)
      return () => this.listeners.delete(listener)
    })
  }

  private tool() {
    // The definitions of the folder Keel started in: the description is fixed for the run (prompt caches need it).
    const set = loadAgents(process.cwd())
    for (const line of set.warnings) notify(this.ctx, 'extend', line)
    return defineTool({
      name: 'task',
      description: describeTask(this.config, set.agents),
      parameters: set.agents.length ? TaskWithAgent : TaskParameters,
      // The child's own calls are each decided by the same policy; starting it changes nothing.
      access: () => ({ kind: 'read' }),
      concurrencySafe: true,
      presentCall: (args) => ({ title: args.description, kind: 'other', rawInput: args }),
      execute: (args, exec) => this.execute(args.description, args.prompt, exec, (args as { agent?: string }).agent),
    })
  }

  private async execute(
    rawDescription: string,
    rawPrompt: string,
    exec: ToolExecution,
    agentName?: string,
  ): Promise<ToolOutput> {
    const parent = asParent(exec.agent)
    if (!parent)
      throw new Error("task must be called by an agent: the subagent is linked to the calling agent's session")
    const description = rawDescription.trim()
    const prompt = rawPrompt.trim()
    if (!description) throw new Error('description is empty; give the task a short label')
    if (!prompt) throw new Error('prompt is empty; write the complete instructions for the subagent')
    if (parent.depth + 1 > this.config.maxDepth) {
      throw new Error(
        `subagents may nest at most ${this.config.maxDepth} level${this.config.maxDepth === 1 ? '' : 's'} deep; do this task yourself`,
      )
    }
    let definition: AgentDefinition | undefined
    if (agentName?.trim()) {
      const set = loadAgents(parent.cwd)
      definition = set.agents.find((entry) => entry.name === agentName.trim())
      if (!definition)
        throw new Error(
          `no agent named ${JSON.stringify(agentName)}; ${set.agents.length ? `agents: ${set.agents.map((entry) => entry.name).join(', ')}` : 'no agent definitions are installed'}`,
        )
    }
    // A project's definition picks a model only once its folder is trusted: until then it is text.
    const named = definitionModel(definition?.model)
    const mayPick = named && (definition!.scope === 'user' || trustState(parent.cwd).trusted)
    const model = mayPick
      ? await this.ctx.llm.create(named, { cwd: parent.cwd })
      : this.config.model
        ? await this.configuredModel(parent.cwd)
        : parent.model
    const slots = this.slotsOf(parent.session.id)
    let release: () => void
    try {
      release = await slots.acquire(exec.signal)
    } catch {
      this.dropSlots(parent.session.id, slots)
      return {
        isError: true,
        content: [{ type: 'text', text: 'Error: the task was cancelled before its subagent started.' }],
      }
    }
    try {
      return await this.run(parent, description, prompt, model, exec, definition)
    } finally {
      release()
      this.dropSlots(parent.session.id, slots)
    }
  }

  private async run(
    parent: ParentAgent,
    description: string,
    prompt: string,
    model: LlmAdapter,
    exec: ToolExecution,
    definition?: AgentDefinition,
  ): Promise<ToolOutput> {
    const agents = this.ctx.agents
    const depth = parent.depth + 1
    const excludeTools = new Set(parent.options?.excludeTools ?? [])
    if (depth >= this.config.maxDepth) excludeTools.add('task')
    // A definition's `tools` is the child's whole offer: every other tool is left out (it only ever narrows).
    if (definition?.tools) {
      const offered = new Set(toolNames(definition.tools))
      for (const tool of this.ctx.tools.names()) if (!offered.has(tool)) excludeTools.add(tool)
    }
    // A child of an in-memory parent stays in memory too: no file should outlive a session that has none.
    const persist = this.ctx.sessions.pathOf(parent.session.id) !== undefined
    const child = agents.create({
      cwd: parent.cwd,
      model,
      depth,
      excludeTools: [...excludeTools],
      persist,
      instructions: parent.instructions,
      ...(definition
        ? {
            system: `${systemPrompt(parent.cwd, new Date(), parent.instructions?.text ?? '')}\n\nYou are the ${definition.name} agent.\n\n${definition.prompt}`,
          }
        : {}),
      parent: { sessionId: parent.session.id, callId: exec.callId },
    })
    this.children.set(child.id, { agent: child, exec })
    const cancel = () => child.cancel()
    try {
      parent.session.append('subagent/start', { callId: exec.callId, sessionId: child.id, description })
      let result: TurnResult
      try {
        const turn = child.prompt(prompt)
        if (exec.signal.aborted) cancel()
        else exec.signal.addEventListener('abort', cancel, { once: true })
        result = await turn
      } catch (error) {
        result = { reason: 'error', message: errorLine(error), text: '', turn: 0, steps: 0, toolCalls: 0 }
      }
      parent.session.append('subagent/end', {
        callId: exec.callId,
        sessionId: child.id,
        reason: result.reason,
        ...(result.message ? { message: result.message } : {}),
        todos: standingPlan(child.session.events),
        cost: sessionCost(child.session.events).total,
      })
      const { text, isError } = resultOf(child.id, result)
      return { isError, content: [{ type: 'text', text }] }
    } finally {
      exec.signal.removeEventListener('abort', cancel)
      this.children.delete(child.id)
      await child.whenIdle()
      agents.close(child)
    }
  }

  /** Child activity: progress lines for the parent's `task` row, and plan changes for `onChanged` listeners. */
  private observe(session: Session, event: SessionEvent): void {
    const link = session.header.parent
    if (!link) return
    const running = this.children.get(session.id)
    if (running?.exec.onUpdate && event.type === 'tool/call') {
      running.exec.onUpdate(
        `${event.data.name}: ${this.ctx.tools.present(event.data.name, event.data.arguments).title}\n`,
      )
    }
    if (event.type === 'todo/write' || event.type === 'turn/start') {
      const parent = this.ctx.sessions.get(link.sessionId)
      if (parent) this.notify(parent, parent.seq - 1)
    }
  }

  private notify(parent: Session, seq: number): void {
    if (!this.listeners.size) return
    const value = this.plans(parent)
    for (const listener of this.listeners) {
      try {
        listener(parent, 'subagentPlans', value, seq)
      } catch {}
    }
  }

  private configuredModel(cwd: string): Promise<LlmAdapter> {
    // One adapter for every child, so a scripted model's steps are shared like a real provider's state would be.
    this.modelPromise ??= this.ctx.llm.create(this.config.model!, { cwd })
    this.modelPromise.catch(() => {
      this.modelPromise = undefined
    })
    return this.modelPromise
  }

  private slotsOf(parentId: string): Slots {
    let slots = this.slots.get(parentId)
    if (!slots) this.slots.set(parentId, (slots = new Slots(this.config.maxConcurrent)))
    return slots
  }

  private dropSlots(parentId: string, slots: Slots): void {
    if (slots.running === 0 && slots.queued === 0 && this.slots.get(parentId) === slots) this.slots.delete(parentId)
  }
}
