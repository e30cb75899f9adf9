import { Input, matchesKey } from '@mariozechner/pi-tui'
import type { PlanEdit, TodoItem, TodoStatus } from '@keel/todo'
import { isPrintable } from './deliberate.ts'

/** What the focused panel shows: the cursor, and the one-line input while adding or renaming. */
export interface PlanFocusView {
  cursor: number
  input?: { label: string; field: Input }
}

export interface PlanFocusHost {
  /** The standing plan as the panel shows it (the fold's value). */
  plan(): readonly TodoItem[] | null
  /** Sends one edit down the plans service's path; the refusal's one line when it is refused. */
  edit(edit: PlanEdit): string | undefined
  /** Gives the one-line input the keys' cursor, or hands it back to the editor (`null`). */
  focusInput(field: Input | null): void
  render(): void
}

/** Space walks an item through the statuses in this order. */
const NEXT_STATUS: Record<TodoStatus, TodoStatus> = {
  pending: 'in_progress',
  in_progress: 'completed',
  completed: 'pending',
}

/**
 * The plan panel under the keys (Ctrl+P): a cursor over the items and one-key edits. Every edit is a `PlanEdit` the
 * host sends through the plans service, as `/plan` does, so the rules and the refusal wording stay there.
 */
export class PlanFocus {
  private view: PlanFocusView | undefined

  constructor(private readonly host: PlanFocusHost) {}

  get active(): PlanFocusView | undefined {
    return this.view
  }

  toggle(): void {
    if (this.view) this.leave()
    else {
      this.view = { cursor: 0 }
      this.host.render()
    }
  }

  leave(): void {
    if (this.view?.input) this.host.focusInput(null)
    this.view = undefined
    this.host.render()
  }

  /** Every key while focused is the panel's: true when it was used (or swallowed so the editor does not get it). */
  handleKey(data: string): boolean {
    const view = this.view
    if (!view) return false
    if (view.input) {
      view.input.field.handleInput(data)
      this.host.render()
      return true
    }
    const todos = this.host.plan() ?? []
    const last = Math.max(0, todos.length - 1)
    view.cursor = Math.min(view.cursor, last)
    const at = view.cursor
    if (matchesKey(data, 'escape') || matchesKey(data, 'ctrl+p')) this.leave()
    else if (matchesKey(data, 'up') || data === 'k') view.cursor = Math.max(0, at - 1)
    else if (matchesKey(data, 'down') || data === 'j') view.cursor = Math.min(last, at + 1)
    else if (data === 'a') this.ask('add', '', (content) => ({ op: 'add', content }))
    else if (!todos.length) return true
    else if (data === 'r') this.ask('rename', todos[at]!.content, (content) => ({ op: 'rename', index: at, content }))
    else if (matchesKey(data, 'shift+up') || matchesKey(data, 'alt+up') || data === 'K') this.move(at, at - 1, last)
    else if (matchesKey(data, 'shift+down') || matchesKey(data, 'alt+down') || data === 'J') this.move(at, at + 1, last)
    else if (data === 'd' || matchesKey(data, 'delete')) this.host.edit({ op: 'delete', index: at })
    else if (data === 'x') {
      const status = todos[at]!.status === 'completed' ? 'pending' : 'completed'
      this.host.edit({ op: 'status', index: at, status })
    } else if (data === ' ') this.host.edit({ op: 'status', index: at, status: NEXT_STATUS[todos[at]!.status] })
    else if (!isPrintable(data)) return true
    this.host.render()
    return true
  }

  private move(index: number, to: number, last: number): void {
    if (to < 0 || to > last) return
    if (!this.host.edit({ op: 'move', index, to })) this.view!.cursor = to
  }

  /** Opens the one-line input; Enter sends what it holds as an edit, Esc closes it unchanged. */
  private ask(label: string, value: string, toEdit: (content: string) => PlanEdit): void {
    const field = new Input()
    field.setValue(value)
    const close = () => {
      if (this.view) this.view.input = undefined
      this.host.focusInput(null)
    }
    field.onEscape = close
    field.onSubmit = (text) => {
      const content = text.trim()
      close()
      if (!content) return
      const edit = toEdit(content)
      if (!this.host.edit(edit) && edit.op === 'add' && this.view)
        this.view.cursor = Math.max(0, (this.host.plan()?.length ?? 1) - 1)
    }
    this.view!.input = { label, field }
    this.host.focusInput(field)
  }
}
