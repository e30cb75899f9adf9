// A yes/no question as an overlay over the transcript (`/init` before it changes an AGENTS.md that exists). The safe
// answer is under the cursor, Esc says no, and Enter answers only after a pause in typing (the Enter that sent the
// command picks nothing).
import { matchesKey, SelectList, truncateToWidth, type Component, type TUI } from '@mariozechner/pi-tui'
import { isPrintable, TypingGuard } from './deliberate.ts'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'
import { editorTheme } from './theme.ts'

class Confirm implements Component {
  private readonly guard = new TypingGuard()
  readonly list: SelectList

  constructor(
    private readonly question: string,
    yes: string,
    answer: (yes: boolean) => void,
  ) {
    this.list = new SelectList(
      [
        { value: 'no', label: 'No' },
        { value: 'yes', label: yes },
      ],
      2,
      editorTheme.selectList,
    )
    this.list.onSelect = (item) => answer(item.value === 'yes')
    this.list.onCancel = () => answer(false)
  }

  handleInput(data: string): void {
    if (isPrintable(data)) {
      this.guard.typed()
      return
    }
    if (matchesKey(data, 'enter') && !this.guard.settled()) return
    this.list.handleInput(data)
  }

  invalidate(): void {
    this.list.invalidate()
  }

  render(width: number): string[] {
    const rule = style.gray('─'.repeat(Math.max(0, width)))
    const lines = [style.bold(escapeLine(this.question)), '', ...this.list.render(Math.max(10, width - 4))]
    return [rule, ...lines.map((line) => truncateToWidth(guardLine(`  ${line}`), width, '…')), rule]
  }
}

/** Asks `question`; resolves true only for an explicit yes. */
export function confirm(tui: TUI, question: string, yes = 'Yes'): Promise<boolean> {
  return new Promise((done) => {
    let hide = () => {}
    const overlay = new Confirm(question, yes, (answer) => {
      hide()
      done(answer)
    })
    const handle = tui.showOverlay(overlay, { anchor: 'bottom-center', width: '100%' })
    hide = () => handle.hide()
  })
}
