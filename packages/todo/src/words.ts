// The words a person edits the plan and answers a proposal with, outside a page: `keel plan …` from a shell and
// `/plan …` in the TUI read the same words into the same request. Items are numbered from 1.
import type { TodoStatus } from './types.ts'
import type { PlanEdit } from './edit.ts'
import type { PlanRequest } from './remote.ts'

export const PLAN_USAGE =
  'plan [show] | add <text> | rename <n> <text> | move <n> <m> | remove <n> | done|start|pending <n> | approve [ask|auto] | reject <sentence>'

const STATUS: Record<string, TodoStatus> = { done: 'completed', start: 'in_progress', pending: 'pending' }

/** The request the words ask for, `'show'`, or an error naming what is wrong. */
export function parsePlanWords(words: readonly string[]): PlanRequest | 'show' | { error: string } {
  const [verb = 'show', ...rest] = words
  const text = rest.join(' ')
  const item = (word: string | undefined): number | undefined => {
    const n = Number(word)
    return Number.isInteger(n) && n >= 1 ? n - 1 : undefined
  }
  const edit = (value: PlanEdit): PlanRequest => ({ op: 'edit', edit: value })
  const one = item(rest[0])
  switch (verb) {
    case 'show':
      if (!rest.length) return 'show'
      break
    case 'add':
      if (text.trim()) return edit({ op: 'add', content: text })
      break
    case 'rename':
      if (one !== undefined && rest.length >= 2)
        return edit({ op: 'rename', index: one, content: rest.slice(1).join(' ') })
      break
    case 'move': {
      const to = item(rest[1])
      if (one !== undefined && to !== undefined && rest.length === 2) return edit({ op: 'move', index: one, to })
      break
    }
    case 'remove':
      if (one !== undefined && rest.length === 1) return edit({ op: 'delete', index: one })
      break
    case 'done':
    case 'start':
    case 'pending':
      if (one !== undefined && rest.length === 1) return edit({ op: 'status', index: one, status: STATUS[verb]! })
      break
    case 'approve': {
      const mode = rest[0] ?? 'ask'
      if (rest.length <= 1 && (mode === 'ask' || mode === 'auto'))
        return { op: 'answer', answer: { kind: 'approve', mode } }
      return { error: `approve runs in ask or auto mode, not ${JSON.stringify(rest.join(' '))}` }
    }
    case 'reject':
      if (text.trim()) return { op: 'answer', answer: { kind: 'reject', message: text } }
      return { error: 'reject needs a sentence for the model: why, and what instead' }
  }
  return { error: `usage: ${PLAN_USAGE}` }
}
