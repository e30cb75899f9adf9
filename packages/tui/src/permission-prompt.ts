import {
  decodeKittyPrintable,
  matchesKey,
  truncateToWidth,
  visibleWidth,
  wrapTextWithAnsi,
  type Component,
} from '@mariozechner/pi-tui'
import type { PermissionAnswer, PermissionAsk } from '@keel/permissions'
import { escapeControls, escapeLine, guardLine } from './safe.ts'
import { style, type Styler } from './style.ts'

interface Waiting {
  ask: PermissionAsk
  settle(answer: PermissionAnswer): void
}

const ALLOW_ONCE: PermissionAnswer = { decision: 'allow', scope: 'once' }
const ALLOW_ALWAYS: PermissionAnswer = { decision: 'allow', scope: 'always' }
const DENY_ONCE: PermissionAnswer = { decision: 'deny', scope: 'once' }

/**
 * The inline approval prompt under the tool card: the ask's detail (the command, the diff, the content of a write)
 * in full, its one-line summary, and the keys. Asks that arrive while one is up (parallel subagents) wait their turn
 * in arrival order. An ask whose signal aborts (the turn was cancelled, or another front door answered first) leaves
 * the queue and settles as a denial that nobody reads.
 */
export class PermissionPrompt implements Component {
  private readonly queue: Waiting[] = []
  private cache: { ask: PermissionAsk; width: number; waiting: number; lines: string[] } | undefined

  /** Called whenever the prompt appears, changes or goes: the app redraws. */
  onChange: () => void = () => {}

  constructor(private readonly options: { sessionLabel?(sessionId: string): string | undefined } = {}) {}

  get active(): PermissionAsk | undefined {
    return this.queue[0]?.ask
  }

  get waiting(): number {
    return this.queue.length
  }

  /** The asker this front door registers with `ctx.permissions.setAsker`. */
  readonly asker = (ask: PermissionAsk, signal: AbortSignal): Promise<PermissionAnswer> =>
    new Promise((resolve) => {
      if (signal.aborted) {
        resolve(DENY_ONCE)
        return
      }
      const entry: Waiting = {
        ask,
        settle: (answer) => {
          signal.removeEventListener('abort', onAbort)
          const index = this.queue.indexOf(entry)
          if (index < 0) return
          this.queue.splice(index, 1)
          resolve(answer)
          this.onChange()
        },
      }
      const onAbort = () => entry.settle(DENY_ONCE)
      signal.addEventListener('abort', onAbort, { once: true })
      this.queue.push(entry)
      this.onChange()
    })

  /**
   * A key while the prompt is up: `y` allow once, `a` always, `n` or Esc deny. Every other key is dropped, not queued
   * for the editor: typing that ran into the prompt should not land half in the editor. False when no prompt is up.
   */
  handleKey(data: string): boolean {
    const current = this.queue[0]
    if (!current) return false
    const key = matchesKey(data, 'escape') ? 'escape' : (decodeKittyPrintable(data) ?? data).toLowerCase()
    let answer: PermissionAnswer | undefined
    if (key === 'y') answer = ALLOW_ONCE
    else if (key === 'a') answer = ALLOW_ALWAYS
    else if (key === 'n' || key === 'escape') answer = DENY_ONCE
    if (answer) current.settle(answer)
    return true
  }

  /** Denies everything waiting (the UI is closing). */
  denyAll(): void {
    for (const entry of [...this.queue]) entry.settle(DENY_ONCE)
  }

  invalidate(): void {
    this.cache = undefined
  }

  render(width: number): string[] {
    const ask = this.queue[0]?.ask
    if (!ask) return []
    const waiting = this.queue.length - 1
    const cached = this.cache
    if (cached && cached.ask === ask && cached.width === width && cached.waiting === waiting) return cached.lines
    const lines = this.lines(ask, waiting, width)
    this.cache = { ask, width, waiting, lines }
    return lines
  }

  private lines(ask: PermissionAsk, waiting: number, width: number): string[] {
    const bar = style.yellow('│ ')
    const label = this.options.sessionLabel?.(ask.sessionId)
    const head = `${style.yellow('◆')} ${style.bold('Allow')} ${escapeLine(ask.summary)}${style.bold('?')}${label ? style.dim(`  (${escapeLine(label)})`) : ''}`
    const lines = ['', ...wrapped(head, width, '  ', '    ')]
    if (ask.reason) lines.push(...wrapped(style.dim(`  ${escapeLine(ask.reason)}`), width, '  ', '    '))
    if (ask.detail) {
      const diff = ask.tool === 'edit' || /^(---|\+\+\+|@@) /m.test(ask.detail)
      for (const line of escapeControls(ask.detail.replace(/\s+$/, '')).split('\n')) {
        lines.push(...wrapped(line, width, `  ${bar}`, `  ${bar}`, diff ? diffStyle(line) : (s) => s))
      }
    }
    const always = ask.suggestedRule ? ` (${escapeLine(ask.suggestedRule)})` : ''
    const keys = `${style.bold('y')} allow once  ${style.bold('a')} always${style.dim(always)}  ${style.bold('n')}/${style.bold('esc')} deny`
    lines.push(...wrapped(keys + (waiting ? style.dim(`  · ${waiting} more waiting`) : ''), width, '  ', '  '))
    return lines
  }
}

function diffStyle(line: string): Styler {
  if (line.startsWith('+++') || line.startsWith('---')) return style.bold
  if (line.startsWith('+')) return style.green
  if (line.startsWith('-')) return style.red
  if (line.startsWith('@@')) return style.cyan
  return (s) => s
}

/** `text` (already escaped and styled) wrapped to `width` under a first-line and a continuation prefix. */
function wrapped(text: string, width: number, first: string, rest: string, styler: Styler = (s) => s): string[] {
  const inner = Math.max(1, width - visibleWidth(first))
  return wrapTextWithAnsi(text, inner).map((piece, i) =>
    truncateToWidth(guardLine((i === 0 ? first : rest) + styler(piece)), Math.max(1, width), '…'),
  )
}
