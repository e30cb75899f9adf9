import { summarize } from '@keel/tools'
import type { TodoItem } from './types.ts'

export interface Policy {
  allowParallelInProgress: boolean
}

/** A plan is a checklist a person reads, not a data store: these bound what one write may hold. */
export const MAX_TODOS = 100
export const MAX_TODO_CHARS = 500

/**
 * The invariants that make a plan coherent, beyond what the schema checks: no blank task, no duplicate (after
 * trimming), and at most one task in progress unless the policy allows parallel work. Returns the trimmed list, or
 * every problem found (one line each), so the model fixes them all in one retry.
 */
export function checkTodos(todos: readonly TodoItem[], policy: Policy): { todos: TodoItem[] } | { error: string } {
  if (todos.length > MAX_TODOS)
    return {
      error: `the plan has ${todos.length} tasks; the limit is ${MAX_TODOS}. Group related steps into fewer, broader tasks`,
    }
  const problems: string[] = []
  const out: TodoItem[] = []
  const seen = new Map<string, number>()
  const active: string[] = []
  for (const [i, todo] of todos.entries()) {
    const content = todo.content.trim()
    if (!content) problems.push(`todos[${i}].content is empty; every task needs a short description`)
    else if (content.length > MAX_TODO_CHARS)
      problems.push(
        `todos[${i}].content is ${content.length} characters; the limit is ${MAX_TODO_CHARS}. Keep each task to a short description`,
      )
    else {
      const first = seen.get(content)
      if (first !== undefined)
        problems.push(`todos[${i}] repeats todos[${first}] (${JSON.stringify(content)}); each task must be unique`)
      else seen.set(content, i)
    }
    if (todo.status === 'in_progress') active.push(content)
    out.push({ content, status: todo.status })
  }
  if (!policy.allowParallelInProgress && active.length > 1) {
    problems.push(
      `${active.length} tasks are in_progress (${active.map((c) => JSON.stringify(c)).join(', ')}); keep exactly one task in_progress and the rest pending or completed`,
    )
  }
  if (problems.length === 1) return { error: problems[0]! }
  if (problems.length) return { error: `${problems.length} problems:\n${summarize(problems).join('\n')}` }
  return { todos: out }
}

/** Items of the previous plan that were not completed and are absent from the new one. */
export function droppedUnfinished(previous: readonly TodoItem[] | null, next: readonly TodoItem[]): string[] {
  if (!previous) return []
  const kept = new Set(next.map((todo) => todo.content))
  return previous.filter((todo) => todo.status !== 'completed' && !kept.has(todo.content)).map((todo) => todo.content)
}

/** The invariant companion's rule for a logged snapshot; silent on how many are in progress. */
export function snapshotProblem(data: unknown): string | undefined {
  const todos = (data as { todos?: unknown })?.todos
  if (!Array.isArray(todos)) return 'todo/write needs a todos array'
  const seen = new Set<string>()
  for (const [i, todo] of todos.entries()) {
    if (!todo || typeof todo !== 'object') return `todos[${i}] is not an object`
    const keys = Object.keys(todo)
    if (keys.length !== 2 || !keys.includes('content') || !keys.includes('status'))
      return `todos[${i}] must have exactly content and status`
    const { content, status } = todo as TodoItem
    if (typeof content !== 'string' || !content || content !== content.trim())
      return `todos[${i}].content must be trimmed and non-empty`
    if (seen.has(content)) return `todos[${i}] duplicates ${JSON.stringify(content)}`
    seen.add(content)
    if (status !== 'pending' && status !== 'in_progress' && status !== 'completed')
      return `todos[${i}].status ${JSON.stringify(status)} is not a known status`
  }
  return undefined
}
