import { matchesKey, truncateToWidth, type Component, type TUI } from '@mariozechner/pi-tui'
import type { Context } from 'cordis'
import { filterRows, rowColumns, type SessionRow, sessionRows } from '@keel/door/session-rows'
import { isPrintable, TypingGuard } from './deliberate.ts'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

// `/resume` with no argument: this directory's sessions, recent first, with the columns `keel sessions list` prints
// (@keel/door/session-rows: turns, model, cost when known) and a fuzzy filter typed straight into the picker. A log
// that cannot be read is listed as unreadable and cannot be picked; reading the logs never blocks the screen.

const VISIBLE = 10

export interface ResumeHost {
  ctx: Context
  tui: TUI
  cwd: string
  /** The open session, marked in the list. */
  current: string
  note(level: 'info' | 'warn' | 'error', text: string): void
  /** Opens the picked session (as `/resume <id>` does). */
  open(id: string): void
}

class ResumePicker implements Component {
  private rows: SessionRow[] | undefined
  private shown: SessionRow[] = []
  private query = ''
  private selected = 0
  /** Enter opens only after a pause in typing: the Enter that sent `/resume` picks nothing. */
  private readonly guard = new TypingGuard()

  constructor(
    private readonly host: ResumeHost,
    private readonly close: () => void,
  ) {
    this.guard.typed()
  }

  load(rows: SessionRow[]): void {
    this.rows = rows
    this.refilter()
  }

  private refilter(): void {
    this.shown = filterRows(this.rows ?? [], this.query)
    this.selected = Math.min(this.selected, Math.max(0, this.shown.length - 1))
    this.host.tui.requestRender()
  }

  handleInput(data: string): void {
    if (matchesKey(data, 'escape')) {
      this.close()
      return
    }
    if (matchesKey(data, 'up') || matchesKey(data, 'down')) {
      if (!this.shown.length) return
      const step = matchesKey(data, 'up') ? -1 : 1
      this.selected = (this.selected + step + this.shown.length) % this.shown.length
      this.host.tui.requestRender()
      return
    }
    if (matchesKey(data, 'enter')) {
      if (!this.guard.settled()) return
      const row = this.shown[this.selected]
      if (!row) return
      if (row.unreadable) {
        this.host.note('warn', `Session ${escapeLine(row.id)} cannot be opened: ${escapeLine(row.unreadable)}`)
        return
      }
      this.close()
      if (row.id !== this.host.current) this.host.open(row.id)
      else this.host.note('info', 'That is the session already open.')
      return
    }
    if (matchesKey(data, 'backspace')) {
      this.query = this.query.slice(0, -1)
      this.refilter()
      return
    }
    if (isPrintable(data)) {
      this.guard.typed()
      this.query += data
      this.refilter()
    }
  }

  invalidate(): void {}

  render(width: number): string[] {
    const rule = style.gray('─'.repeat(Math.max(0, width)))
    const lines = [
      style.bold('Resume a session') + style.dim(`  type to filter · ↑↓ pick · enter opens · esc closes`),
      `${style.cyan('filter › ')}${escapeLine(this.query)}`,
    ]
    if (!this.rows) lines.push(style.dim('Reading the session logs…'))
    else if (!this.shown.length)
      lines.push(style.dim(this.rows.length ? 'No session matches.' : 'No sessions in this directory yet.'))
    const start = Math.max(0, Math.min(this.selected - Math.floor(VISIBLE / 2), this.shown.length - VISIBLE))
    for (const [offset, row] of this.shown.slice(start, start + VISIBLE).entries()) {
      const index = start + offset
      const mark = row.id === this.host.current ? '*' : ' '
      const when = row.updatedAt ? new Date(row.updatedAt).toISOString().replace('T', ' ').slice(0, 16) : ''
      const text = row.unreadable
        ? `${mark} ${escapeLine(row.id)}  ${rowColumns(row)}`
        : `${mark} ${when}  ${rowColumns(row)}  ${escapeLine(row.title || '(no prompt)')}`
      lines.push(
        index === this.selected ? style.cyan(`› ${text}`) : row.unreadable ? style.dim(`  ${text}`) : `  ${text}`,
      )
      if (index === this.selected && row.firstPrompt.length > row.title.length)
        lines.push(style.dim(`      ${escapeLine(row.firstPrompt)}`))
    }
    if (this.shown.length > VISIBLE) lines.push(style.dim(`  ${this.shown.length} sessions`))
    return [rule, ...lines.map((line) => truncateToWidth(guardLine(` ${line}`), Math.max(1, width), '…')), rule]
  }
}

/** Opens the picker over the transcript and reads the rows behind it. */
export function openResumePicker(host: ResumeHost): void {
  let hide = () => {}
  const picker = new ResumePicker(host, () => hide())
  const handle = host.tui.showOverlay(picker, { anchor: 'bottom-center', width: '100%', maxHeight: '80%' })
  hide = () => handle.hide()
  sessionRows(host.ctx, host.cwd).then(
    (rows) => picker.load(rows),
    (error: unknown) => {
      hide()
      host.note(
        'error',
        `Cannot list the sessions: ${escapeLine(error instanceof Error ? error.message : String(error))}`,
      )
    },
  )
}
