import { imageLabel } from '@keel/session/image'
import { STEERED } from '@keel/door/words'
import { truncateToWidth, visibleWidth, wrapTextWithAnsi, type Component } from '@mariozechner/pi-tui'
import type { SubagentPlan } from '@keel/subagent'
import { openTasksNotice, planSummary, type TodoItem } from '@keel/todo'
import { describeDecision } from '@keel/permissions'
import type { TranscriptEntry as Entry, ToolEntry, TranscriptState, TurnEndEntry } from '@keel/door/transcript'
import {
  compactionWords,
  hookWords,
  planDroppedWords,
  planEditWords,
  proposalWords,
  turnEndWords,
} from '@keel/door/words'
import { diffCounts, renderDiff } from './diff-view.ts'
import { highlighterLoaded, onHighlighterReady } from './highlight.ts'
import { renderMarkdown } from './markdown.ts'
import { planLines } from './plan-panel.ts'
import { escapeControls, escapeLine, guardLine } from './safe.ts'
import { style, type Styler } from './style.ts'
import { renderShellEntry } from './user-shell.ts'

/** Output lines a finished tool card shows before it is expanded. */
const OUTPUT_LINES = 4
/** Lines an expanded card shows at most: a huge output must not stall every frame. */
const EXPANDED_LINES = 400
/**
 * Screens of lines a long session draws above the viewport when it opens; PageUp draws that many more. Every frame
 * renders and diffs the whole window, so a 2,000-turn session must not put all its entries in it.
 */
const WINDOW_SCREENS = 3
/** A fence: the markdown holds code the highlighter colours once it has loaded. */
const FENCE = /```|~~~/

export interface TranscriptDeps {
  /** `ctx.tools.present`: a card's title from the tool's `presentCall`. */
  present(name: string, args: string): { title: string }
  subagentPlan?(callId: string): SubagentPlan | undefined
  /** Asks for a frame: the code highlighter finished loading after code was drawn plain. */
  requestRender?(): void
  /** The terminal's height: the window of entries drawn is a few screens of it. Without it every entry is drawn. */
  rows?(): number
}

/** What streams in before the log has the whole message: `agent/delta` text, reasoning, tool output. */
export interface LiveStream {
  text: string
  reasoning: string
  /** Output of running tools, by call id. */
  output: Record<string, string>
  /** A tool call the model is still writing. */
  preparing?: string
}

export function emptyLive(): LiveStream {
  return { text: '', reasoning: '', output: {} }
}

export type NoteLevel = 'info' | 'warn' | 'error' | 'command'
/** UI-only lines (command output, repairs). `at` is the entry count when it was added: it renders after those. */
export interface Note {
  at: number
  level: NoteLevel
  text: string
}

export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(Math.max(0, ms) / 1000).toFixed(1)}s`
  const minutes = Math.floor(ms / 60_000)
  return `${minutes}m ${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`
}

/** Wraps escaped text to `width`, with a first-line prefix and a continuation prefix of the same width. */
function wrap(text: string, width: number, first: string, rest: string, styler: Styler = (s) => s): string[] {
  const inner = Math.max(1, width - visibleWidth(first))
  const out: string[] = []
  for (const line of text.split('\n')) {
    for (const piece of wrapTextWithAnsi(line, inner)) out.push(styler(piece))
  }
  return out.map((line, i) => fit((i === 0 ? first : rest) + line, width))
}

function fit(line: string, width: number): string {
  return truncateToWidth(guardLine(line), Math.max(1, width), '…')
}

function nonEmptyLines(text: string): string[] {
  const lines = text.replace(/\s+$/, '').split('\n')
  return lines.length === 1 && lines[0] === '' ? [] : lines
}

/** The one-line reason of a failed call: its `Error:` line, else its last line. */
function errorReason(output: string): string {
  const lines = nonEmptyLines(output)
  return lines.find((line) => line.startsWith('Error')) ?? lines[lines.length - 1] ?? 'failed'
}

function todoArgs(raw: string): TodoItem[] | undefined {
  try {
    const parsed = JSON.parse(raw) as { todos?: unknown }
    if (!Array.isArray(parsed?.todos)) return undefined
    const todos = parsed.todos.filter(
      (todo): todo is TodoItem => typeof todo?.content === 'string' && typeof todo?.status === 'string',
    )
    return todos.length === parsed.todos.length ? todos : undefined
  } catch {
    return undefined
  }
}

/**
 * The conversation: the fold's entries, UI notes between them, and whatever is still streaming. Finished entries
 * are rendered once per width and cached; running cards and the live tail render every frame.
 */
export class TranscriptView implements Component {
  state: TranscriptState | undefined
  live: LiveStream = emptyLive()
  notes: Note[] = []
  /** Banner lines above everything (already styled; built from trusted text only). */
  banner: string[] = []
  /** Ctrl+O: full tool output and reasoning. */
  expanded = false
  private cache = new WeakMap<Entry, { width: number; expanded: boolean; lines: string[] }>()
  /** The first entry drawn; undefined until the first frame after a reset picks the window. */
  private start: number | undefined
  /** Entries drawn with plain code before the highlighter loaded: the only ones its arrival redraws. */
  private plainCode = new Set<Entry>()

  constructor(private readonly deps: TranscriptDeps) {
    onHighlighterReady(() => {
      for (const entry of this.plainCode) this.cache.delete(entry)
      this.plainCode.clear()
      deps.requestRender?.()
    })
  }

  /** Entries before the window, not drawn yet (0 once everything is). */
  get hidden(): number {
    return this.start ?? 0
  }

  /** PageUp: draws a few more screens of earlier entries above the window. False when everything is drawn. */
  showEarlier(width: number): boolean {
    if (!this.start) return false
    this.start = this.windowStart(this.start, width)
    return true
  }

  note(level: NoteLevel, text: string): void {
    this.notes.push({ at: this.state?.entries.length ?? 0, level, text })
  }

  reset(state: TranscriptState): void {
    // Notes from before the first session opened (the boot's notices: a folder not trusted, an MCP server down)
    // stay, under the session's history; a later reset (another session) starts clean.
    const boot = this.state ? [] : this.notes.map((note) => ({ ...note, at: state.entries.length }))
    this.state = state
    this.live = emptyLive()
    this.notes = boot
    this.cache = new WeakMap()
    this.plainCode.clear()
    this.start = undefined
  }

  invalidate(): void {
    this.cache = new WeakMap()
  }

  render(width: number): string[] {
    const lines = this.banner.map((line) => fit(line, width))
    const entries = this.state?.entries ?? []
    this.start ??= this.windowStart(entries.length, width)
    const start = this.start
    if (start > 0)
      lines.push(
        '',
        fit(style.dim(`  … ${start} earlier entr${start === 1 ? 'y' : 'ies'} not drawn  pgup draws more`), width),
      )
    let n = 0
    while (n < this.notes.length && this.notes[n]!.at < start) n++
    for (let i = start; i <= entries.length; i++) {
      while (n < this.notes.length && this.notes[n]!.at <= i) lines.push(...this.renderNote(this.notes[n++]!, width))
      if (i < entries.length) lines.push(...this.renderEntry(entries[i]!, width))
    }
    lines.push(...this.renderLive(width))
    return lines
  }

  /** Where a window ending before entry `end` starts: far enough back for a few screens of lines. */
  private windowStart(end: number, width: number): number {
    const rows = this.deps.rows?.()
    if (!rows) return 0
    const entries = this.state?.entries ?? []
    let budget = rows * WINDOW_SCREENS
    let i = end
    while (i > 0 && budget > 0) budget -= this.renderEntry(entries[--i]!, width).length
    return i
  }

  private renderEntry(entry: Entry, width: number): string[] {
    const cached = this.cache.get(entry)
    if (cached && cached.width === width && cached.expanded === this.expanded) return cached.lines
    let lines: string[]
    let final = true
    switch (entry.kind) {
      case 'user':
        lines = [
          '',
          ...wrap(escapeControls(entry.text), width, style.cyan('› '), '  ', style.bold),
          ...(entry.images ?? []).map((image) => `  ${style.dim(escapeLine(imageLabel(image)))}`),
        ]
        // Sent while the turn ran and delivered before its next request (the agent's queue): said where it landed.
        if (entry.steer) lines.push(style.dim(`  (${STEERED})`))
        break
      case 'shell':
        lines = renderShellEntry(entry.command, entry.output, width, this.expanded)
        break
      case 'assistant':
        if (!highlighterLoaded() && FENCE.test(entry.text)) this.plainCode.add(entry)
        lines = this.renderAssistant(entry.text, entry.reasoning, width)
        break
      case 'tool':
        lines = this.renderTool(entry, width)
        final = entry.status !== 'running' && entry.name !== 'task'
        break
      case 'turn-end':
        lines = renderTurnEnd(entry, width)
        break
      case 'plan-open': {
        const notice = openTasksNotice(entry.open)
        lines = [fit(style.yellow(`  ◌ ${notice.head}: `) + style.dim(notice.names), width)]
        break
      }
      case 'compaction': {
        const words = compactionWords(entry)
        lines = entry.error
          ? [fit(`  ${style.yellow(`── ${escapeLine(words.text)}`)}`, width)]
          : [fit(style.dim(`  ── ${words.text} ──`), width)]
        break
      }
      case 'hook': {
        const words = hookWords(entry.run)
        lines = words
          ? [fit(`  ${(words.tone === 'info' ? style.dim : style.yellow)(`↳ ${escapeLine(words.text)}`)}`, width)]
          : []
        break
      }
      case 'proposal': {
        const words = proposalWords(entry)
        const head = `◇ ${escapeLine(words.text)}`
        lines = [
          '',
          fit(`  ${entry.status === 'pending' ? style.yellow(head) : style.dim(head)}`, width),
          ...renderMarkdown(entry.plan, width - 4).map((line) => fit(`    ${line}`, width)),
          ...planLines(entry.todos, width, { indent: '    ', expanded: true, title: 'Checklist' }),
        ]
        if (entry.status === 'pending')
          lines.push(fit(style.dim('    /plan approve [ask|auto] · /plan edit · /plan reject <why>'), width))
        break
      }
      case 'plan-edit':
        lines = [fit(style.dim(`  ✎ ${escapeLine(planEditWords(entry.change).text)}`), width)]
        break
      case 'plan-dropped':
        lines = [fit(style.yellow(`  ! ${escapeLine(planDroppedWords(entry.items).text)}`), width)]
        break
      case 'context':
      case 'rewind':
        // Harness-made context is for the model; a rewind shows as the TUI's own note when it happens.
        lines = []
        break
    }
    if (final) this.cache.set(entry, { width, expanded: this.expanded, lines })
    return lines
  }

  private renderAssistant(text: string, reasoning: string, width: number, streaming = false): string[] {
    const lines: string[] = []
    if (reasoning.trim()) {
      if (this.expanded) {
        lines.push(
          '',
          ...wrap(escapeControls(reasoning.trim()), width, style.dim('✻ '), '  ', (s) => style.dim(style.italic(s))),
        )
      } else {
        const count = nonEmptyLines(reasoning.trim()).length
        const label = streaming && !text ? 'Thinking…' : `Thought for ${count} line${count === 1 ? '' : 's'}`
        lines.push('', fit(style.dim(style.italic(`✻ ${label}`)) + style.dim('  ctrl+o to show'), width))
      }
    }
    if (text.trim()) {
      lines.push('')
      for (const line of renderMarkdown(text.trim(), width)) lines.push(fit(line, width))
    }
    return lines
  }

  private renderTool(entry: ToolEntry, width: number): string[] {
    const elapsed = formatDuration((entry.endedAt ?? entry.startedAt) - entry.startedAt)
    const dot =
      entry.status === 'running' || entry.status === 'cancelled'
        ? style.yellow('●')
        : entry.status === 'done'
          ? style.green('●')
          : style.red('●')
    // A running card shows no ticking clock (the status line does): a card that scrolled above the viewport would
    // otherwise force pi-tui into a full redraw on every tick.
    const statusText =
      entry.status === 'running'
        ? style.yellow('running')
        : entry.status === 'error'
          ? `${style.red(entry.failure ? `✗ ${escapeLine(entry.failure)}` : 'error')} ${style.dim(elapsed)}`
          : entry.status === 'cancelled'
            ? `${style.yellow('cancelled')} ${style.dim(elapsed)}`
            : style.dim(elapsed)
    const diff = entry.status === 'done' ? entry.diff : undefined
    const todos = entry.name === 'todo_write' ? todoArgs(entry.arguments) : undefined
    let title: string
    if (todos) {
      const summary = planSummary(todos)
      title = `${summary.done}/${summary.total} done${summary.active ? ` · ${summary.active}` : ''}${summary.moreActive ? ` +${summary.moreActive}` : ''}`
    } else {
      title = withoutToolName(this.deps.present(entry.name, entry.arguments).title, entry.name)
    }
    const name = style.bold(escapeLine(entry.name))
    const head = title ? `${dot} ${name} ` : `${dot} ${name}`
    const tail = `  ${diff ? `${diffCounts(diff)}  ` : ''}${statusText}`
    const room = Math.max(4, width - visibleWidth(head) - visibleWidth(tail))
    const lines = ['', fit(head + truncateToWidth(escapeLine(title), room, '…') + tail, width)]
    const body = entry.status === 'running' ? (this.live.output[entry.callId] ?? '') : entry.output
    const decision = entry.decision
    const verdict = decision && describeDecision(decision)
    // Wrapped, not cut: an "always" line ends with the settings file the rule went to.
    // The mode letting a call through (a read-only command in the sandbox) is the quiet, ordinary case: dimmed.
    const tone = decision?.decision === 'deny' ? style.red : decision?.scope === 'mode' ? style.dim : style.green
    if (verdict) lines.push(...wrap(escapeLine(verdict), width, '  ', '    ', tone))
    for (const run of entry.hooks ?? []) {
      const words = hookWords(run)
      const hookTone = words?.tone === 'error' ? style.red : words?.tone === 'warn' ? style.yellow : style.dim
      if (words) lines.push(...wrap(escapeLine(words.text), width, '  ↳ ', '    ', hookTone))
    }
    if (decision?.decision === 'deny') {
      // The decision line says why; the result repeats it for the model.
      if (this.expanded) lines.push(...this.outputLines(body, width))
    } else if (entry.status === 'error' && entry.failure) {
      // A command that failed: its output says why, as a success's would (the header says how it ended).
      lines.push(...this.outputLines(body, width))
    } else if (entry.status === 'error') {
      // Ctrl+O shows the whole error, wrapped, where the card otherwise shows its one-line reason cut to the width.
      if (this.expanded)
        lines.push(...wrap(escapeControls(body.trimEnd()), width, style.red('  ✗ '), '    ', style.red))
      else lines.push(fit(`  ${style.red('✗ ' + escapeLine(errorReason(body)))}`, width))
    } else if (entry.status === 'cancelled') {
      // The bare notice says nothing the status does; partial output (a bash cut short) is worth showing.
      if (nonEmptyLines(body).length > 1) lines.push(...this.outputLines(body, width))
    } else if (diff) {
      lines.push(...renderDiff(diff, width, this.expanded))
    } else if (todos) {
      const dropped = nonEmptyLines(body).find((line) => line.startsWith('Removed without completing'))
      if (dropped) lines.push(fit(`  ${style.dim(escapeLine(dropped))}`, width))
    } else {
      lines.push(...this.outputLines(body, width))
    }
    const child = entry.name === 'task' ? this.deps.subagentPlan?.(entry.callId) : undefined
    if (child?.todos?.length) {
      if (child.status === 'running')
        lines.push(...planLines(child.todos, width, { indent: '    ', title: child.description || 'Subagent plan' }))
      else
        lines.push(
          fit(
            `    ${style.dim(`${escapeLine(child.description || 'Subagent')} plan ${planSummary(child.todos).done}/${child.todos.length}`)}`,
            width,
          ),
        )
    }
    return lines
  }

  private outputLines(output: string, width: number): string[] {
    const all = nonEmptyLines(escapeControls(output))
    const limit = this.expanded ? EXPANDED_LINES : OUTPUT_LINES
    const shown = all.slice(-limit)
    const lines: string[] = []
    if (all.length > shown.length) {
      const more = all.length - shown.length
      lines.push(
        fit(
          style.dim(`  │ … ${more} earlier line${more === 1 ? '' : 's'}${this.expanded ? '' : '  ctrl+o to expand'}`),
          width,
        ),
      )
    }
    for (const line of shown) lines.push(fit(style.dim('  │ ') + line, width))
    return lines
  }

  private renderLive(width: number): string[] {
    const live = this.live
    const lines = this.renderAssistant(live.text, live.reasoning, width, true)
    if (live.preparing)
      lines.push('', fit(`${style.yellow('●')} ${style.bold(escapeLine(live.preparing))} ${style.dim('…')}`, width))
    return lines
  }

  private renderNote(note: Note, width: number): string[] {
    if (note.level === 'command')
      return ['', ...wrap(escapeControls(note.text), width, style.dim('› '), '  ', style.dim)]
    const styler: Styler = note.level === 'error' ? style.red : note.level === 'warn' ? style.yellow : style.dim
    return ['', ...wrap(escapeControls(note.text), width, '  ', '  ', styler)]
  }
}

/** A call's title without a leading tool name ("Edit a.txt" under `edit` reads "a.txt"): the card shows the name. */
export function withoutToolName(title: string, name: string): string {
  const [first, ...rest] = title.split(' ')
  return first!.toLowerCase() === name.toLowerCase() ? rest.join(' ') : title
}

function renderTurnEnd(entry: TurnEndEntry, width: number): string[] {
  const words = turnEndWords(entry.reason, entry.message)
  if (!words) return []
  const text = escapeLine(words.text)
  return [fit(`  ${words.tone === 'error' ? style.red(`✗ ${text}`) : style.yellow(`⏹ ${text}`)}`, width)]
}
