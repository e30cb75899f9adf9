// A plan proposal's life on the log (`plan/proposal`, `plan/edit`, `plan/approve`, `plan/reject`) as one fold, and
// the words the model reads about plan mode. Browser-safe like plan.ts (the web client imports it through
// `@keel/todo/plan`): only types from elsewhere, no Node import.
import type { SessionEvent } from '@keel/session'
import { parseTodoList } from './items.ts'
import type { TodoItem } from './types.ts'

/** A person's answer to the pending proposal: edit the draft, approve it (maybe edited) in a mode, or reject it. */
export type ProposalAnswer =
  | { kind: 'edit'; plan?: string; todos?: TodoItem[] }
  | { kind: 'approve'; mode: 'ask' | 'auto'; plan?: string; todos?: TodoItem[] }
  | { kind: 'reject'; message: string }

export type ProposalStatus = 'pending' | 'approved' | 'rejected'

export interface Proposal {
  callId: string
  /** The seq of its `plan/proposal`. */
  seq: number
  plan: string
  todos: TodoItem[]
  status: ProposalStatus
  /** The person edited the draft (`plan/edit`) or approved it changed. */
  edited: boolean
  /** The mode an approval chose. */
  mode?: 'ask' | 'auto'
  /** A rejection's sentence. */
  message?: string
}

/**
 * The latest proposal after `event`, as a new object when it changed. An answer naming another call than the
 * latest proposal changes nothing (a newer proposal superseded it); the log is read, not trusted.
 */
export function applyProposal(state: Proposal | null, event: SessionEvent): Proposal | null {
  switch (event.type) {
    case 'plan/proposal': {
      const todos = parseTodoList(event.data.todos)
      if (typeof event.data.callId !== 'string' || typeof event.data.plan !== 'string' || !todos) return state
      return {
        callId: event.data.callId,
        seq: event.seq,
        plan: event.data.plan,
        todos,
        status: 'pending',
        edited: false,
      }
    }
    case 'plan/edit': {
      const todos = parseTodoList(event.data.todos)
      if (state?.status !== 'pending' || event.data.callId !== state.callId) return state
      if (typeof event.data.plan !== 'string' || !todos) return state
      return { ...state, plan: event.data.plan, todos, edited: true }
    }
    case 'plan/approve': {
      const todos = parseTodoList(event.data.todos)
      if (state?.status !== 'pending' || event.data.callId !== state.callId) return state
      if (typeof event.data.plan !== 'string' || !todos) return state
      const mode = event.data.mode === 'auto' ? 'auto' : 'ask'
      const edited = state.edited || event.data.plan !== state.plan || !sameTodos(todos, state.todos)
      return { ...state, plan: event.data.plan, todos, status: 'approved', mode, edited }
    }
    case 'plan/reject':
      if (state?.status !== 'pending' || event.data.callId !== state.callId) return state
      return { ...state, status: 'rejected', message: String(event.data.message ?? '') }
    default:
      return state
  }
}

/** The latest proposal of a log, whatever became of it. */
export function latestProposal(events: readonly SessionEvent[]): Proposal | null {
  let state: Proposal | null = null
  for (const event of events) state = applyProposal(state, event)
  return state
}

function sameTodos(a: readonly TodoItem[], b: readonly TodoItem[]): boolean {
  return a.length === b.length && a.every((todo, i) => todo.content === b[i]!.content && todo.status === b[i]!.status)
}

/** The line the model reads when plan mode starts (and after a rejection): short and fixed, so prompts cache. */
export const PLAN_MODE_ON =
  'Plan mode: explore with read tools only; nothing may be changed yet. When you have a plan, call propose_plan with it and its checklist, then end your turn.'
/** The line the model reads when plan mode ends (an approval says it too). */
export const PLAN_MODE_OFF = 'Plan mode is over: you may change files as the permission mode allows.'

/** The prompt of the turn an approval opens. */
export function approvalPrompt(
  proposal: Pick<Proposal, 'plan' | 'todos'>,
  mode: 'ask' | 'auto',
  edited: boolean,
): string {
  const checklist = proposal.todos.map((todo, i) => `${i + 1}. ${todo.content}`).join('\n')
  return [
    `The person approved your plan${edited ? ', with their edits' : ''}, to run in ${mode} mode. It is the standing plan: carry it out now, keeping the checklist current with todo_write.`,
    '',
    proposal.plan.trim(),
    '',
    `Checklist:\n${checklist}`,
    '',
    PLAN_MODE_OFF,
  ].join('\n')
}

/** The prompt of the turn a rejection opens. */
export function rejectionPrompt(message: string): string {
  return `The person rejected your plan and said: ${JSON.stringify(message)}. Keep planning and propose again. ${PLAN_MODE_ON}`
}

/** The note the model reads at its next request after the person changed the plan. */
export function changeNote(change: string, todos: readonly TodoItem[]): string {
  const list = todos.map((todo, i) => `${i + 1}. [${todo.status}] ${todo.content}`).join('\n')
  return `The person changed the plan: ${change}. Keep their items; the plan now:\n${list || '(empty)'}`
}
