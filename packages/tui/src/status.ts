import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'
import { formatDuration } from './transcript.ts'

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/** The line above the editor: a spinner while a turn runs, queued prompts, and short-lived hints. */
export class StatusLine implements Component {
  /** When the running turn started, or undefined when idle. */
  runningSince: number | undefined
  /** The tool call running now, if any: its clock ticks here rather than on its card. */
  activeTool: (() => { name: string; startedAt: number } | undefined) | undefined
  /** Whether an approval prompt is up: Esc answers it then, so the hint changes. */
  asking: (() => boolean) | undefined
  queued = 0
  /** Esc was pressed: said until the turn has ended (not for a fixed time, which left it on screen after). */
  cancelling = false
  /** Why nothing streams: the request waits to be retried (`retryText`), until its reply. */
  retry: string | undefined
  private flash: { text: string; until: number } | undefined

  constructor(private readonly now: () => number = Date.now) {}

  /** A hint that disappears after `ms` (the app re-renders on its ticker or the next event). */
  show(text: string, ms: number): void {
    this.flash = { text, until: this.now() + ms }
  }

  clearHint(): void {
    this.flash = undefined
  }

  get hint(): string | undefined {
    return this.flash && this.flash.until > this.now() ? this.flash.text : undefined
  }

  invalidate(): void {}

  render(width: number): string[] {
    const parts: string[] = []
    if (this.runningSince !== undefined) {
      const elapsed = this.now() - this.runningSince
      const frame = SPINNER[Math.floor(elapsed / 100) % SPINNER.length]!
      const tool = this.activeTool?.()
      const running = tool ? ` · ${escapeLine(tool.name)} ${formatDuration(this.now() - tool.startedAt)}` : ''
      const keys = this.asking?.() ? 'waiting for your answer · ctrl+c cancels the turn' : 'esc to cancel'
      parts.push(
        `${style.cyan(frame)} ${style.cyan('working')} ${style.dim(`${formatDuration(elapsed)}${running} · ${keys}`)}`,
      )
      if (this.retry && !this.cancelling) parts.push(style.yellow(escapeLine(this.retry)))
      if (this.cancelling) parts.push(style.yellow('Cancelling…'))
    }
    if (this.queued) parts.push(style.dim(`${this.queued} queued`))
    const hint = this.hint
    if (hint) parts.push(style.yellow(escapeLine(hint)))
    if (!parts.length) return ['']
    return ['', truncateToWidth(guardLine(parts.join(style.dim('  ·  '))), Math.max(1, width), '…')]
  }
}
