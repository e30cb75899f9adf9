import {
  Input,
  matchesKey,
  truncateToWidth,
  visibleWidth,
  wrapTextWithAnsi,
  type Component,
} from '@mariozechner/pi-tui'
import type { PermissionAnswer, PermissionAsk } from '@keel/permissions'
import { isPrintable, TypingGuard } from './deliberate.ts'
import { escapeControls, escapeLine, guardLine } from './safe.ts'
import { style, type Styler } from './style.ts'

interface Waiting {
  ask: PermissionAsk
  settle(answer: PermissionAnswer): void
}

/** One numbered choice; `why` opens the line where the person writes a sentence for the model. */
interface Choice {
  label: string
  note?: string
  answer: PermissionAnswer
  why?: true
}

const DENY_ONCE: PermissionAnswer = { decision: 'deny', scope: 'once' }

/** The file name a rule file is shown by (the card says where "always" writes). */
function fileLabel(path: string | undefined, fallback: string): string {
  const name = path?.split(/[\\/]/).pop()
  return `.keel/${name ?? fallback}`
}

/** The choices for an ask, in the order shown: allow once, for this session, always (personal, shared), deny. */
export function choicesOf(ask: PermissionAsk): Choice[] {
  const choices: Choice[] = [{ label: 'Allow once', answer: { decision: 'allow', scope: 'once' } }]
  if (ask.sessionRules.length)
    choices.push({
      label: 'Allow for this session',
      note: ask.sessionRules.join(', '),
      answer: { decision: 'allow', scope: 'session' },
    })
  if (ask.suggestedRules.length) {
    const rules = ask.suggestedRules.join(', ')
    choices.push(
      {
        label: 'Always allow',
        note: `${rules} → ${fileLabel(ask.files?.local, 'settings.local.json')}`,
        answer: { decision: 'allow', scope: 'always', file: 'local' },
      },
      {
        label: 'Always allow, for everyone',
        note: `${rules} → ${fileLabel(ask.files?.project, 'settings.json')}`,
        answer: { decision: 'allow', scope: 'always', file: 'project' },
      },
    )
  }
  choices.push(
    { label: 'Deny', answer: DENY_ONCE },
    { label: 'Deny, and tell the model why…', answer: DENY_ONCE, why: true },
  )
  return choices
}

/**
 * The inline approval prompt under the tool card: the ask's detail (the command, the diff, the content of a write)
 * in full, its one-line summary, and numbered choices confirmed with Enter. An answer is a deliberate act: letters
 * go to the editor (the person was typing), and Enter or a digit counts only after a pause in typing (TypingGuard),
 * so the tail of a sentence never answers. Asks that arrive while one is up (parallel subagents) wait their turn in
 * arrival order. An ask whose signal aborts (the turn was cancelled, or another front door answered first) leaves
 * the queue and settles as a denial that nobody reads.
 */
export class PermissionPrompt implements Component {
  private readonly queue: Waiting[] = []
  private cache: { ask: PermissionAsk; width: number; key: string; lines: string[] } | undefined
  private selected = 0
  /** The sentence for the model, while the person writes it. */
  private why: Input | undefined
  readonly guard: TypingGuard

  /** Called whenever the prompt appears, changes or goes: the app redraws. */
  onChange: () => void = () => {}

  constructor(
    private readonly options: { sessionLabel?(sessionId: string): string | undefined; now?: () => number } = {},
  ) {
    this.guard = new TypingGuard(options.now)
  }

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
          if (index === 0) this.opened()
          resolve(answer)
          this.onChange()
        },
      }
      const onAbort = () => entry.settle(DENY_ONCE)
      signal.addEventListener('abort', onAbort, { once: true })
      this.queue.push(entry)
      if (this.queue.length === 1) this.opened()
      this.onChange()
    })

  /** A new ask is on top: the cursor starts at "Allow once" and the pause in typing starts now. */
  private opened(): void {
    this.selected = 0
    this.why = undefined
    this.guard.typed()
  }

  /**
   * A key while the prompt is up. True when the prompt took it; false hands it on (to the editor): letters, and
   * digits typed mid-sentence, are the person's text. ↑/↓ and a digit move the cursor, Enter confirms (after a
   * pause in typing), Esc denies. False when no prompt is up.
   */
  handleKey(data: string): boolean {
    const current = this.queue[0]
    if (!current) return false
    const choices = choicesOf(current.ask)
    if (this.why) return this.whyKey(current, data)
    if (matchesKey(data, 'escape')) {
      current.settle(DENY_ONCE)
      return true
    }
    if (matchesKey(data, 'up') || matchesKey(data, 'down')) {
      const step = matchesKey(data, 'up') ? -1 : 1
      this.selected = (this.selected + step + choices.length) % choices.length
      this.changed()
      return true
    }
    if (matchesKey(data, 'enter')) {
      if (!this.guard.settled()) return true
      const choice = choices[this.selected]!
      if (choice.why) {
        this.why = new Input()
        this.why.onSubmit = (text) => current.settle({ ...DENY_ONCE, ...(text.trim() ? { message: text.trim() } : {}) })
        this.why.onEscape = () => {
          this.why = undefined
          this.changed()
        }
        this.changed()
      } else current.settle(choice.answer)
      return true
    }
    if (isPrintable(data)) {
      const digit = /^[1-9]$/.test(data) ? Number(data) : 0
      if (digit && digit <= choices.length && this.guard.settled()) {
        this.selected = digit - 1
        this.changed()
        return true
      }
      this.guard.typed()
      return false
    }
    return false
  }

  private whyKey(current: Waiting, data: string): boolean {
    this.why!.handleInput(data)
    if (this.queue[0] === current) this.changed()
    return true
  }

  private changed(): void {
    this.cache = undefined
    this.onChange()
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
    const key = `${waiting}:${this.selected}:${this.why ? `w${this.why.getValue()}` : ''}`
    const cached = this.cache
    if (cached && cached.ask === ask && cached.width === width && cached.key === key) return cached.lines
    const lines = this.lines(ask, waiting, width)
    this.cache = { ask, width, key, lines }
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
    const more = waiting ? style.dim(`  · ${waiting} more waiting`) : ''
    if (this.why) {
      lines.push(style.bold('  Why? The model reads this with the denial:'))
      for (const line of this.why.render(Math.max(1, width - 4))) lines.push(truncateToWidth(`    ${line}`, width, '…'))
      lines.push(...wrapped(style.dim('enter sends · esc goes back') + more, width, '  ', '  '))
      return lines
    }
    const choices = choicesOf(ask)
    choices.forEach((choice, i) => {
      const on = i === this.selected
      const text = `${on ? style.cyan('❯') : ' '} ${i + 1}. ${on ? style.bold(choice.label) : choice.label}${choice.note ? style.dim(`  ${escapeLine(choice.note)}`) : ''}`
      lines.push(...wrapped(text, width, '  ', '       '))
    })
    const keys = `↑↓ or 1-${choices.length} choose · enter confirms · esc denies`
    lines.push(...wrapped(style.dim(keys) + more, width, '  ', '  '))
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
