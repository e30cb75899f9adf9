import { existsSync } from 'node:fs'
import type { Server } from 'node:net'
import { type Context, Service } from 'cordis'
import type { Agent, TurnResult } from '@keel/agent'
import type {} from '@keel/permissions' // ctx.permissions
import { type Session, sessionPath } from '@keel/session'
import { applyEdit, type PlanEdit } from './edit.ts'
import { carriedPlan, modeLine, pendingChangeNote } from './notes.ts'
import { standingPlanOf } from './plan.ts'
import { listenForPlanEdits, type PlanReply, type PlanRequest, planSocketPath } from './remote.ts'
import { approvalPrompt, latestProposal, type Proposal, type ProposalAnswer, rejectionPrompt } from './proposal.ts'
import type { TodoItem } from './types.ts'
import { checkTodos, type Policy } from './validate.ts'

/** An answer or edit that could not be applied: the one line a door shows. Nothing of it reached the log. */
export interface Refusal {
  error: string
}

/** The longest rejection sentence kept (a plan note, not a document). */
const MAX_MESSAGE = 2000

/**
 * `ctx.plans`: the person's side of the plan. Edits from any door (`todo/write` with `source: 'user'`), the answer to
 * a proposal, and what the model is told before each request (the plan-mode line, the change note, a person's plan
 * carried into a new turn). Every rule is checked here, once, so a door only passes on what the person did.
 */
export class PlanService extends Service {
  constructor(
    ctx: Context,
    readonly policy: Policy,
  ) {
    super(ctx, 'plans', true)
    ctx.inject(['invariants'], (ctx) => {
      // The person edits and answers whenever they like, between turns too.
      for (const type of ['todo/write', 'plan/edit', 'plan/approve', 'plan/reject'])
        ctx.invariants.allowBetweenTurns(type)
    })
    ctx.on('agent/prepare', async (agent) => this.prepare(agent))
    ctx.on('session/event', (session) => this.serve(session))
    ctx.on('session/closed', (session) => {
      this.servers.get(session.id)?.close()
      this.servers.delete(session.id)
    })
    ctx.on('dispose', () => {
      for (const server of this.servers.values()) server?.close()
      this.servers.clear()
    })
  }

  /** The socket `keel plan` reaches each held session on (null: none for it); see remote.ts. */
  private readonly servers = new Map<string, Server | null>()

  /** Starts listening for `keel plan` once a top-level session with a file and an agent in this process is live. */
  private serve(session: Session): void {
    if (this.servers.has(session.id)) return
    const agent = this.ctx.get('agents')?.get(session.id)
    if (!agent) return
    const path = planSocketPath(session.id)
    if (session.header.parent || !path || !existsSync(sessionPath(session.header.cwd, session.id))) {
      this.servers.set(session.id, null)
      return
    }
    try {
      this.servers.set(
        session.id,
        listenForPlanEdits(path, (request) => this.handle(agent, request)),
      )
    } catch {
      this.servers.set(session.id, null)
    }
  }

  private async handle(agent: Agent, request: PlanRequest): Promise<PlanReply> {
    if (request.op === 'edit') return this.edit(agent.session, request.edit) ?? { ok: true }
    const answered = await this.answer(agent, request.answer)
    return 'error' in answered ? answered : { ok: true }
  }

  /** Replaces the plan with the person's list, when it keeps the plan's rules (named in the refusal otherwise). */
  write(session: Session, todos: readonly TodoItem[]): Refusal | undefined {
    if (session.header.parent) return { error: "a subagent's plan is its own; edit the main session's plan" }
    const checked = checkTodos(todos, this.policy)
    if ('error' in checked) return { error: `the plan was not changed: ${checked.error}` }
    session.append('todo/write', { todos: checked.todos, source: 'user' })
    return undefined
  }

  /** One edit (add, rename, move, delete, status) to the standing plan, written as the whole new list. */
  edit(session: Session, edit: PlanEdit): Refusal | undefined {
    const next = applyEdit(standingPlanOf(session) ?? [], edit)
    if ('error' in next) return { error: `the plan was not changed: ${next.error}` }
    return this.write(session, next.todos)
  }

  /** The session's latest proposal, whatever became of it. */
  proposal(session: Session): Proposal | null {
    return latestProposal(session.events)
  }

  /**
   * Answers the pending proposal. An edit replaces the draft. Approval and rejection wait for the running turn to
   * end, then open the next one: approval logs `plan/approve`, makes the checklist the person's standing plan,
   * switches the mode, and prompts the model to carry it out; rejection logs `plan/reject` and prompts the model,
   * which stays in plan mode, with the person's sentence. `turn` settles when that turn ends.
   */
  async answer(agent: Agent, answer: ProposalAnswer): Promise<Refusal | { turn?: Promise<TurnResult> }> {
    const session = agent.session
    if (answer.kind !== 'edit') await agent.whenIdle()
    const pending = this.proposal(session)
    if (pending?.status !== 'pending') return { error: 'no plan is waiting for an answer' }
    const callId = pending.callId
    if (answer.kind === 'reject') {
      const message = typeof answer.message === 'string' ? answer.message.trim().slice(0, MAX_MESSAGE) : ''
      if (!message) return { error: 'say why the plan is rejected: the model reads the sentence and keeps planning' }
      session.append('plan/reject', { callId, message })
      // The model keeps planning: the turn runs in plan mode, whatever the mode became meanwhile.
      this.ctx.get('permissions')?.setMode('plan', [session])
      return { turn: agent.prompt(rejectionPrompt(message), { source: 'plan' }) }
    }
    const plan = answer.plan === undefined ? pending.plan : String(answer.plan).trim()
    if (!plan) return { error: 'the plan text is empty' }
    const todos = answer.todos ?? pending.todos
    if (!todos.length) return { error: 'the checklist is empty; keep at least one task' }
    const checked = checkTodos(todos, this.policy)
    if ('error' in checked) return { error: `the plan was not changed: ${checked.error}` }
    if (answer.kind === 'edit') {
      session.append('plan/edit', { callId, plan, todos: checked.todos })
      return {}
    }
    if (answer.mode !== 'ask' && answer.mode !== 'auto') return { error: 'approve to run in ask or auto mode' }
    const edited =
      pending.edited || plan !== pending.plan || JSON.stringify(checked.todos) !== JSON.stringify(pending.todos)
    session.append('plan/approve', { callId, mode: answer.mode, plan, todos: checked.todos })
    session.append('todo/write', { todos: checked.todos, source: 'user' })
    this.ctx.get('permissions')?.setMode(answer.mode, [session])
    return {
      turn: agent.prompt(approvalPrompt({ plan, todos: checked.todos }, answer.mode, edited), { source: 'plan' }),
    }
  }

  /** Before each request of a top-level agent: carry the person's plan, then the plan-mode line and change note. */
  private prepare(agent: Agent): void {
    if (agent.depth > 0) return
    const session = agent.session
    const carried = carriedPlan(session)
    if (carried) session.append('todo/write', { todos: carried, source: 'user' })
    const note = (text: string) =>
      session.append(
        'user/message',
        { message: { role: 'user', content: [{ type: 'text', text }], source: 'plan' } },
        { surfaceOp: { op: 'append' } },
      )
    const line = modeLine(session, this.ctx.get('permissions')?.mode === 'plan')
    if (line) note(line)
    const change = pendingChangeNote(session)
    if (change) note(change)
  }
}
