import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import { GLYPHS, planHeader, type TodoItem } from '@keel/todo'
import type { PlanFocusView } from './plan-focus.ts'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

/** Lists longer than this collapse to a window around the active item. */
const COLLAPSE_ABOVE = 7
/** Items shown in the collapsed window. */
const WINDOW = 5

export interface PlanWindow {
  start: number
  end: number
}

/**
 * Which items a collapsed list shows: a window of WINDOW items around the first in-progress item (or the first
 * pending one; or the last items when everything is done), so the active task always has its neighbours.
 */
export function planWindow(todos: readonly TodoItem[], size = WINDOW): PlanWindow {
  if (todos.length <= size) return { start: 0, end: todos.length }
  let focus = todos.findIndex((todo) => todo.status === 'in_progress')
  if (focus < 0) focus = todos.findIndex((todo) => todo.status === 'pending')
  if (focus < 0) focus = todos.length - 1
  // One item of context before the active one, the rest after it: what comes next matters more.
  const start = Math.max(0, Math.min(focus - 1, todos.length - size))
  return { start, end: start + size }
}

function itemLine(todo: TodoItem, indent: string): string {
  const content = escapeLine(todo.content)
  switch (todo.status) {
    case 'completed':
      return `${indent}${style.green(GLYPHS.completed)} ${style.dim(content)}`
    case 'in_progress':
      return `${indent}${style.yellow(GLYPHS.in_progress)} ${style.bold(content)}`
    default:
      return `${indent}${style.dim(GLYPHS.pending)} ${content}`
  }
}

export interface PlanLinesOptions {
  /** Show every item even when the list is long. */
  expanded?: boolean
  indent?: string
  /** Shown dimmed after the header (the key that expands or collapses). */
  hint?: string
  /** Replaces the word `Plan` in the header (nested subagent plans). */
  title?: string
  /** Tool calls since the plan was last written while a task is in progress; shown once it looks stale. */
  staleCalls?: number
  /** The item under the keys' cursor (the panel is focused): marked, and the whole list shown. */
  cursor?: number
}

/** From this many tool calls without an update, the header says how old the plan is. */
export const STALE_AFTER_CALLS = 8

/** The plan as terminal lines no wider than `width`: header with counts, then one line per item. */
export function planLines(todos: readonly TodoItem[], width: number, options: PlanLinesOptions = {}): string[] {
  const indent = options.indent ?? ''
  const collapsed = !options.expanded && options.cursor === undefined && todos.length > COLLAPSE_ABOVE
  const counts = planHeader(todos).replace(/^Plan /, '')
  const title = options.title === undefined ? 'Plan' : escapeLine(options.title)
  let header = `${indent}${style.bold(title)} ${style.dim(counts)}`
  const stale = options.staleCalls ?? 0
  if (stale >= STALE_AFTER_CALLS && todos.some((todo) => todo.status === 'in_progress'))
    header += style.yellow(` · updated ${stale} tool calls ago`)
  if (options.hint) header += style.dim(`  ${options.hint}`)
  const lines = [header]
  const itemIndent = `${indent}  `
  const { start, end } = collapsed ? planWindow(todos) : { start: 0, end: todos.length }
  if (start > 0) {
    const hidden = todos.slice(0, start)
    const allDone = hidden.every((todo) => todo.status === 'completed')
    lines.push(style.dim(`${itemIndent}${allDone ? `${GLYPHS.completed} ${start} done` : `+${start} more`}`))
  }
  for (let i = start; i < end; i++)
    lines.push(itemLine(todos[i]!, i === options.cursor ? `${indent}${style.cyan('›')} ` : itemIndent))
  if (end < todos.length) lines.push(style.dim(`${itemIndent}+${todos.length - end} more`))
  return lines.map((line) => truncateToWidth(guardLine(line), Math.max(1, width), '…'))
}

/**
 * The standing plan, between the transcript and the editor. Hidden while no plan stands (and for an empty list).
 * `setPlan` is called with the fold's value; `toggle` flips between the collapsed window and the whole list.
 */
export class PlanPanel implements Component {
  private todos: readonly TodoItem[] | null = null
  private staleCalls = 0
  expanded = false
  /** Set while the panel has the keys (Ctrl+P). */
  focus: PlanFocusView | undefined

  setPlan(todos: readonly TodoItem[] | null, staleCalls = 0): void {
    this.todos = todos
    this.staleCalls = staleCalls
  }

  get plan(): readonly TodoItem[] | null {
    return this.todos
  }

  toggle(): void {
    this.expanded = !this.expanded
  }

  invalidate(): void {}

  render(width: number): string[] {
    const todos = this.todos
    if (this.focus) return ['', ...this.focusedLines(todos ?? [], this.focus, width)]
    if (!todos?.length) return []
    const hint = todos.length > COLLAPSE_ABOVE ? (this.expanded ? 'ctrl+t collapse' : 'ctrl+t show all') : undefined
    return ['', ...planLines(todos, width, { expanded: this.expanded, hint, staleCalls: this.staleCalls })]
  }

  private focusedLines(todos: readonly TodoItem[], focus: PlanFocusView, width: number): string[] {
    const cursor = Math.min(focus.cursor, todos.length - 1)
    const hint = todos.length
      ? '↑↓ select · a add · r rename · J/K move · x done · space status · d delete · esc leave'
      : 'a add · esc leave'
    const lines = planLines(todos, width, { hint, cursor: todos.length ? cursor : undefined })
    if (!todos.length) lines.push(style.dim('  (no plan yet)'))
    if (!focus.input) return lines
    const label = `  ${focus.input.label}: `
    const field = focus.input.field.render(Math.max(1, width - label.length))
    return [...lines, `${style.bold(label)}${field[0] ?? ''}`]
  }
}
