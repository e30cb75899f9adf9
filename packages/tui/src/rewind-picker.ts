import type { Context } from 'cordis'
import {
  matchesKey,
  SelectList,
  truncateToWidth,
  visibleWidth,
  type Component,
  type SelectItem,
  type TUI,
} from '@mariozechner/pi-tui'
import {
  performRewind,
  previewRewind,
  repositoriesLine,
  turnPrompts,
  type Change,
  type RewindOutcome,
  type RewindPreview,
  type RewindScope,
  type TurnPrompt,
} from '@keel/checkpoint'
import type { Session } from '@keel/session'
import { isPrintable, TypingGuard } from './deliberate.ts'
import { flattenLine } from '@keel/session/text'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'
import { editorTheme } from './theme.ts'

// `/rewind`: pick one of this session's prompts, then what to restore, then see the files that change and the ones
// the person changed since the agent's last snapshot, and confirm. The rewind itself is @keel/checkpoint's, the same
// code `keel sessions rewind` runs.

const SCOPES: { value: RewindScope; label: string; description: string }[] = [
  { value: 'both', label: 'Files and conversation', description: 'restore the files; continue in a fork before it' },
  { value: 'files', label: 'Files only', description: 'restore the files; the conversation goes on here' },
  { value: 'conversation', label: 'Conversation only', description: 'continue in a fork before it; files stay' },
]

/** At most this many files are listed; the rest are counted. */
const MAX_FILES_SHOWN = 12
const MAX_VISIBLE_ITEMS = 10

export interface RewindHost {
  ctx: Context
  tui: TUI
  /** The open session (its agent holds the writer lock and is idle). */
  session: Session
  note(level: 'info' | 'warn' | 'error', text: string): void
  /** Opens the fork in place of the session, with `message` as its first note and `draft` in the editor. */
  continueIn(fork: string, message: string, draft: string): void
}

type Step =
  | { kind: 'turn'; list: SelectList }
  | { kind: 'scope'; prompt: TurnPrompt; list: SelectList }
  | { kind: 'busy'; text: string }
  | { kind: 'confirm'; prompt: TurnPrompt; preview: RewindPreview; list: SelectList }
  | { kind: 'refused'; prompt: TurnPrompt; scope: RewindScope; message: string; list: SelectList }

/** The picker, shown as an overlay over the transcript; Esc goes back a step (closes it from the first). */
class RewindPicker implements Component {
  private step: Step
  private closed = false
  /** Enter confirms only after a pause in typing: the Enter that sent `/rewind`, or typing on, picks nothing. */
  private readonly guard = new TypingGuard()

  constructor(
    private readonly host: RewindHost,
    private readonly prompts: TurnPrompt[],
    private readonly close: () => void,
  ) {
    this.step = this.turnStep()
  }

  private turnStep(): Step {
    const items = this.prompts.map<SelectItem>((prompt) => ({
      value: String(prompt.turn),
      label: `Turn ${prompt.turn}`,
      description: escapeLine(prompt.text.replace(/\s+/g, ' ').trim()) || '(empty prompt)',
    }))
    const list = selectList(items)
    // The latest prompt first under the cursor: rewinding the last turn is the usual case.
    list.setSelectedIndex(items.length - 1)
    list.onSelect = (item) => {
      const prompt = this.prompts.find((p) => String(p.turn) === item.value)
      if (prompt) this.show(this.scopeStep(prompt))
    }
    list.onCancel = () => this.finish()
    return { kind: 'turn', list }
  }

  private scopeStep(prompt: TurnPrompt): Step {
    const list = selectList(SCOPES.map(({ value, label, description }) => ({ value, label, description })))
    list.onSelect = (item) => void this.preview(prompt, item.value as RewindScope)
    list.onCancel = () => this.show(this.turnStep(), prompt)
    return { kind: 'scope', prompt, list }
  }

  private async preview(prompt: TurnPrompt, scope: RewindScope): Promise<void> {
    this.show({ kind: 'busy', text: 'Looking at the files…' })
    const { session } = this.host
    try {
      const preview = await previewRewind(
        this.host.ctx.get('checkpoints'),
        { id: session.id, cwd: session.header.cwd, events: session.events },
        { kind: 'turn', toTurn: prompt.turn, scope },
      )
      this.show(this.confirmStep(prompt, preview))
    } catch (error) {
      this.show(this.refusedStep(prompt, scope, messageOf(error)))
    }
  }

  private confirmStep(prompt: TurnPrompt, preview: RewindPreview): Step {
    const conflicts = preview.plan?.conflicts.length ?? 0
    const go = conflicts
      ? { value: 'force', label: 'Overwrite my changes and rewind' }
      : { value: 'go', label: 'Rewind' }
    // With conflicts the safe answer is under the cursor: overwriting someone's work takes a deliberate move.
    const list = selectList(
      conflicts ? [{ value: 'back', label: 'Cancel' }, go] : [go, { value: 'back', label: 'Cancel' }],
    )
    list.onSelect = (item) => {
      if (item.value === 'back') this.show(this.scopeStep(prompt))
      else void this.perform(prompt, preview, item.value === 'force')
    }
    list.onCancel = () => this.show(this.scopeStep(prompt))
    return { kind: 'confirm', prompt, preview, list }
  }

  private refusedStep(prompt: TurnPrompt, scope: RewindScope, message: string): Step {
    const list = selectList([{ value: 'back', label: 'Back' }])
    list.onSelect = () => this.show(this.scopeStep(prompt))
    list.onCancel = () => this.show(this.scopeStep(prompt))
    return { kind: 'refused', prompt, scope, message, list }
  }

  private async perform(prompt: TurnPrompt, preview: RewindPreview, force: boolean): Promise<void> {
    this.show({ kind: 'busy', text: 'Rewinding…' })
    const { ctx, session } = this.host
    let outcome: RewindOutcome
    try {
      outcome = await performRewind({ checkpoints: ctx.get('checkpoints'), sessions: ctx.sessions }, preview, {
        session,
        force,
        forceHint: 'pick the rewind again to see them',
      })
    } catch (error) {
      // Files changed after the list was shown (or git failed): nothing was rewound; show why, offer the way back.
      const scope = preview.request.kind === 'turn' ? preview.request.scope : 'files'
      this.show(this.refusedStep(prompt, scope, messageOf(error)))
      return
    }
    this.finish()
    const files = preview.plan ? filesSentence(outcome.changes, prompt.turn) : ''
    const overwrote = outcome.overwrote.length ? ` Overwrote your changes to: ${outcome.overwrote.join(', ')}.` : ''
    const undo = preview.plan ? ` To put the files back: keel sessions rewind ${session.id} --undo` : ''
    if (outcome.fork) {
      this.host.continueIn(
        outcome.fork,
        `${files}Continuing in session ${outcome.fork}, forked from ${session.id} before turn ${prompt.turn}.${overwrote}${undo}`,
        prompt.text,
      )
    } else {
      this.host.note('info', `${files.trim()}${overwrote}${undo}`)
    }
  }

  private show(step: Step, select?: TurnPrompt): void {
    if (this.closed) return
    if (step.kind === 'turn' && select) step.list.setSelectedIndex(this.prompts.indexOf(select))
    this.step = step
    this.host.tui.requestRender()
  }

  private finish(): void {
    if (this.closed) return
    this.closed = true
    this.close()
  }

  handleInput(data: string): void {
    if (isPrintable(data)) {
      this.guard.typed()
      return
    }
    if (matchesKey(data, 'enter') && !this.guard.settled()) return
    if ('list' in this.step) this.step.list.handleInput(data)
  }

  invalidate(): void {
    if ('list' in this.step) this.step.list.invalidate()
  }

  render(width: number): string[] {
    const inner = Math.max(10, width - 4)
    const body = this.body(inner)
    const rule = style.gray('─'.repeat(Math.max(0, width)))
    return [rule, ...body.map((line) => fit(`  ${line}`, width)), rule]
  }

  private body(width: number): string[] {
    const step = this.step
    switch (step.kind) {
      case 'turn':
        return [
          `${style.bold('Rewind')} ${style.dim('· pick the prompt to go back to (its turn is undone)')}`,
          '',
          ...step.list.render(width),
          '',
          style.dim('↑↓ choose · enter select · esc close'),
        ]
      case 'scope':
        return [
          `${style.bold('Rewind to before turn')} ${step.prompt.turn}${style.dim(` · ${escapeLine(flattenLine(step.prompt.text, 80))}`)}`,
          '',
          ...step.list.render(width),
          '',
          style.dim('enter select · esc back'),
        ]
      case 'busy':
        return [style.dim(step.text)]
      case 'refused':
        return [
          `${style.bold('Rewind to before turn')} ${step.prompt.turn}`,
          '',
          style.yellow(escapeLine(step.message)),
          '',
          ...step.list.render(width),
        ]
      case 'confirm':
        return [
          `${style.bold('Rewind to before turn')} ${step.prompt.turn}${style.dim(` · ${scopeLabel(step.preview)}`)}`,
          '',
          ...previewLines(step.preview),
          '',
          ...step.list.render(width),
          '',
          style.dim('enter select · esc back'),
        ]
    }
  }
}

/** Opens the picker over the transcript; tells the person instead when there is nothing to rewind. */
export function openRewindPicker(host: RewindHost): void {
  const prompts = turnPrompts(host.session.events)
  if (!prompts.length) {
    host.note('info', 'Nothing to rewind: this session has no prompts yet.')
    return
  }
  let hide = () => {}
  const picker = new RewindPicker(host, prompts, () => hide())
  const handle = host.tui.showOverlay(picker, { anchor: 'bottom-center', width: '100%', maxHeight: '80%' })
  hide = () => handle.hide()
}

function previewLines(preview: RewindPreview): string[] {
  const lines: string[] = []
  const plan = preview.plan
  if (plan) {
    if (!plan.changes.length) lines.push('No files change.')
    else {
      lines.push(`Files that change (${plan.changes.length}):`)
      for (const change of plan.changes.slice(0, MAX_FILES_SHOWN)) lines.push(`  ${describeChange(change)}`)
      if (plan.changes.length > MAX_FILES_SHOWN)
        lines.push(style.dim(`  … and ${plan.changes.length - MAX_FILES_SHOWN} more`))
    }
    if (plan.conflicts.length) {
      lines.push(
        '',
        style.yellow(
          `Yours (changed since the agent's last snapshot, or ignored by git); the rewind would overwrite them:`,
        ),
      )
      for (const path of plan.conflicts.slice(0, MAX_FILES_SHOWN)) lines.push(style.yellow(`  ${escapeLine(path)}`))
      if (plan.conflicts.length > MAX_FILES_SHOWN)
        lines.push(style.yellow(`  … and ${plan.conflicts.length - MAX_FILES_SHOWN} more`))
    }
    const kept = repositoriesLine(plan.repositories.map(escapeLine))
    if (kept) lines.push('', style.dim(kept))
  } else {
    lines.push('The files stay as they are.')
  }
  if (preview.forkBeforeSeq !== undefined)
    lines.push('The conversation continues in a new session (a fork); this one is kept as it is.')
  return lines
}

function describeChange(change: Change): string {
  const path = escapeLine(change.path)
  if (change.status === 'A') return `recreate ${path}`
  if (change.status === 'D') return `delete   ${path}`
  return `restore  ${path}`
}

function scopeLabel(preview: RewindPreview): string {
  const scope = preview.request.kind === 'turn' ? preview.request.scope : 'files'
  return SCOPES.find((s) => s.value === scope)!.label.toLowerCase()
}

function filesSentence(changes: readonly Change[], turn: number): string {
  return `Rewound the files to the start of turn ${turn} (${changes.length} file${changes.length === 1 ? '' : 's'} changed). `
}

function selectList(items: SelectItem[]): SelectList {
  return new SelectList(items, MAX_VISIBLE_ITEMS, editorTheme.selectList, {
    minPrimaryColumnWidth: 10,
    maxPrimaryColumnWidth: 34,
  })
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function fit(line: string, width: number): string {
  const guarded = guardLine(line)
  return visibleWidth(guarded) > width ? truncateToWidth(guarded, width, '…') : guarded
}
