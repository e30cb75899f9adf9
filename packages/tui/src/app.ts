import type { Context } from 'cordis'
import { Editor, matchesKey, TUI, type Terminal } from '@mariozechner/pi-tui'
import type { Agent, AgentDelta, LlmAdapter, QueueKind } from '@keel/agent'
import type { NotifySettings } from '@keel/door/call-back'
import { type ContentBlock, onNotice, stripTerminalCodes, type Session, type SessionEvent } from '@keel/session'
import type { Command, CommandActions, NoteLevel } from './commands/command.ts'
import { COMMANDS, parseCommand, slashCommands } from './commands/registry.ts'
import { fileCommands } from './commands/files.ts'
import { KeelAutocomplete, PathIndex } from './complete.ts'
import { scriptedLabel } from './model-switch.ts'
import { userCommandOf } from '@keel/door/shell-message'
import { recordUserCommand, runUserCommand } from '@keel/door/user-command'
import { queueKeptWords, USER_COMMAND_USAGE, userCommandWords } from '@keel/door/words'
import { ShellRunView } from './user-shell.ts'
import { emptyTranscript, foldEvent, foldEvents, promptsOf, type TranscriptState } from '@keel/door/transcript'
import { contextWindowOf, Footer } from './footer.ts'
import { Attachments } from './attachments.ts'
import { isPrintable } from './deliberate.ts'
import { cycleMode } from './mode-cycle.ts'
import { PermissionPrompt } from './permission-prompt.ts'
import { PlanFocus } from './plan-focus.ts'
import { PlanPanel } from './plan-panel.ts'
import { errorLine } from '@keel/session/text'
import { escapeLine } from './safe.ts'
import { StatusLine } from './status.ts'
import { costLabel } from '@keel/session/cost'
import { retryText } from '@keel/llm/retry-text'
import { style } from './style.ts'
import { subagentPlan } from './subagent.ts'
import { editorTheme } from './theme.ts'
import { emptyLive, TranscriptView } from './transcript.ts'
import { QueueView } from './queue-view.ts'
import { TerminalCallBack } from './call-back.ts'

/** The banner's note of the AGENTS.md / CLAUDE.md files in the system prompt (none: no line). */
function instructionsLine(agent: Agent): string[] {
  const files = agent.instructions.files
  if (!files.length) return []
  const cut = files.some((file) => file.cut) ? ' (capped at 32 KiB)' : ''
  return [style.dim(`Instructions: ${files.map((file) => escapeLine(file.label)).join(', ')}${cut}`)]
}

/** Live tool output kept per running call; the log has the whole result once the call ends. */
const LIVE_OUTPUT_CAP = 64 * 1024
const DOUBLE_PRESS_MS = 2000

export interface AppOptions {
  ctx: Context
  terminal: Terminal
  agent: Agent
  cwd: string
  /** The open agent's model (`provider/model`): the footer shows it and `/model` compares with it. */
  modelSpec: string
  /** The model the flags or settings configured, when a reopened session chose another (`/model` lists both). */
  configuredModel?: string
  /** Builds the adapter for `/model <spec>` as the CLI builds the flags' model; without it, `ctx.llm.create`. */
  createModel?: (spec: string, baseUrl?: string) => Promise<LlmAdapter>
  version: string
  /** Shown on every frame in the footer (the scripted demo). */
  label?: string
  /** Extra banner text under the title (trusted). */
  intro?: string
  repairs?: string[]
  resumed?: boolean
  /** The settings' `notify` and `notifyWhen` (the bell and OSC 9 / OSC 777 when a turn ends or an approval waits). */
  notify?: NotifySettings
}

/**
 * The interactive UI: transcript, plan panel, status line, editor and footer over one agent. Every log event of the
 * agent's session goes through `foldEvent`; opening a session (start, /new, /resume) replays its log through the
 * same fold.
 */
export class KeelApp {
  readonly tui: TUI
  readonly editor: Editor
  readonly transcript: TranscriptView
  readonly plan = new PlanPanel()
  /** The plan panel under the keys (Ctrl+P). */
  private readonly planFocus: PlanFocus
  readonly prompt: PermissionPrompt
  readonly status = new StatusLine()
  readonly footer: Footer
  /** A `!command` running now: its live output, above the approval prompt and the editor. */
  readonly shellView = new ShellRunView()
  /** The agent's queued prompts, under the editor until each is delivered. */
  readonly queueView = new QueueView()
  private readonly callBack: TerminalCallBack
  /** How the next submit is sent while a turn runs: Alt+Enter makes it a follow-up. */
  private submitKind: QueueKind = 'steer'
  private shell: { controller: AbortController; done: Promise<void> } | undefined
  private readonly completion: KeelAutocomplete
  private readonly actions: CommandActions
  /** Images attached in the editor, by their labels. */
  private readonly attachments = new Attachments(() => this.agent.cwd)
  /** The built-in commands, then the command files found at start (@keel/extend's, first of a name wins). */
  private readonly commands: readonly Command[]
  agent: Agent
  state: TranscriptState = emptyTranscript()
  private running: Promise<unknown> | undefined
  private ticker: ReturnType<typeof setInterval> | undefined
  private lastCtrlC = 0
  private readonly disposers: (() => void)[] = []
  private exit: ((code: number) => void) | undefined
  private closing = false

  constructor(private readonly options: AppOptions) {
    const { ctx, terminal } = options
    this.agent = options.agent
    this.commands = [...COMMANDS, ...fileCommands(options.cwd, COMMANDS)]
    this.actions = this.commandActions()
    this.tui = new TUI(terminal)
    this.callBack = new TerminalCallBack(terminal, options.notify ?? {}, (moment) => ctx.emit('door/call-back', moment))
    this.transcript = new TranscriptView({
      present: (name, args) => ctx.tools.present(name, args),
      subagentPlan: (callId) => subagentPlan(ctx, this.agent.session, callId),
      requestRender: () => this.tui.requestRender(),
      rows: () => terminal.rows,
    })
    this.transcript.banner = [
      `${style.bold('Keel')} ${style.dim(options.version)}  ${style.dim('/help for commands · esc cancels · shift+tab mode · ctrl+c twice exits')}`,
      ...(options.intro ? options.intro.split('\n').map((line) => style.yellow(line)) : []),
      ...instructionsLine(options.agent),
    ]
    this.status.activeTool = () => this.activeTool()
    this.status.asking = () => this.prompt.active !== undefined
    this.editor = new Editor(this.tui, editorTheme)
    this.completion = new KeelAutocomplete(slashCommands(this.commands, this.actions), new PathIndex(options.cwd))
    this.editor.setAutocompleteProvider(this.completion)
    this.editor.onSubmit = (text) => this.submit(text)
    // A typed `@shot.png ` or a dragged path to an image becomes its label; a refused one is one line.
    this.editor.onChange = (text) => {
      const attached = this.attachments.attach(text)
      if (attached.text !== undefined) this.editor.setText(attached.text)
      if (attached.error) this.transcript.note('error', attached.error)
    }
    this.footer = new Footer({
      model: options.modelSpec,
      cwd: options.cwd,
      sessionId: this.agent.id,
      tokens: { input: 0, output: 0 },
      label: options.label,
    })
    this.prompt = new PermissionPrompt({
      sessionLabel: (id) => (id === this.agent.id ? undefined : 'asked by a subagent'),
    })
    this.prompt.onChange = () => this.tui.requestRender()
    for (const child of [
      this.transcript,
      this.shellView,
      this.prompt,
      this.plan,
      this.status,
      this.editor,
      this.queueView,
      this.footer,
    ])
      this.tui.addChild(child)
    this.tui.setFocus(this.editor)
    this.planFocus = new PlanFocus({
      plan: () => this.plan.plan,
      edit: (edit) => {
        const plans = ctx.get('plans')
        const refused = plans ? plans.edit(this.agent.session, edit)?.error : 'plans are not loaded (add @keel/todo)'
        if (refused) this.transcript.note('error', refused)
        return refused
      },
      focusInput: (field) => this.tui.setFocus(field ?? this.editor),
      render: () => {
        this.plan.focus = this.planFocus.active
        this.tui.requestRender()
      },
    })
    this.tui.addInputListener((data) => this.onKey(data))
    this.disposers.push(
      ctx.on('session/event', (session, event) => this.onEvent(session, event)),
      ctx.on('agent/delta', (agent, delta) => this.onDelta(agent, delta)),
      // Plugins' one-line notices for the person (`keel/notice`): an MCP server down, checkpoints off, …
      onNotice(ctx, (notice) => this.warn(notice.text)),
      // The agent's one prompt queue: shown under the editor until delivered; a follow-up starts its own turn.
      ctx.on('agent/queue', (agent, items) => {
        if (agent !== this.agent) return
        this.queueView.items = items
        this.status.queued = items.length
        this.tui.requestRender()
      }),
      // A turn the UI did not start (a follow-up): tracked once prompt() has registered it.
      ctx.on('agent/status', (agent, status) => {
        if (agent === this.agent && status === 'running') queueMicrotask(() => this.track(agent))
      }),
      ctx.on('permission/mode', (mode) => {
        this.footer.info.mode = mode
        this.tui.requestRender()
      }),
    )
    // While the UI runs it is how Keel asks; without @keel/permissions in the composition nothing asks.
    const permissions = ctx.get('permissions')
    if (permissions) {
      this.disposers.push(
        permissions.setAsker((ask, signal) => {
          this.callBack.call({ kind: 'approval', sessionId: ask.sessionId, summary: ask.summary })
          return this.prompt.asker(ask, signal)
        }),
      )
      this.footer.info.mode = permissions.mode
    }
    this.open(this.agent)
    if (options.resumed)
      this.transcript.note('info', `Resumed session ${this.agent.id} on ${escapeLine(options.modelSpec)}.`)
    for (const repair of options.repairs ?? []) this.transcript.note('warn', repair)
  }

  /** Starts drawing; resolves with the exit code when the person quits. */
  run(initialPrompt?: string): Promise<number> {
    const done = new Promise<number>((resolve) => {
      this.exit = resolve
    })
    this.tui.start()
    this.callBack.start()
    if (initialPrompt?.trim()) this.submit(initialPrompt)
    return done
  }

  /** Lines as they would be drawn at `width` (tests and text captures). */
  frame(width: number): string[] {
    return this.tui.render(width)
  }

  private warn(line: string): void {
    this.transcript.note('warn', line)
    this.tui.requestRender()
  }

  /** Shows `agent`'s session: replays its log through the fold and seeds the editor history with its prompts. */
  private open(agent: Agent): void {
    this.agent = agent
    this.attachments.clear()
    this.queueView.items = agent.queue.list()
    this.status.queued = agent.queue.size
    this.state = foldEvents(agent.session.events)
    this.transcript.reset(this.state)
    this.plan.setPlan(this.state.plan, this.state.openTurn === null ? 0 : this.state.callsSincePlan)
    this.footer.info = {
      ...this.footer.info,
      sessionId: agent.id,
      tokens: { ...this.state.tokens },
      cost: costLabel(this.state.cost),
      contextWindow: contextWindowOf(this.options.ctx, agent.model),
      jobs: this.state.jobs.length,
    }
    for (const prompt of promptsOf(this.state)) this.editor.addToHistory(prompt)
    this.tui.requestRender()
  }

  /** The latest tool call of the open turn that is still running. */
  private activeTool(): { name: string; startedAt: number } | undefined {
    const entries = this.state.entries
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!
      if (entry.kind === 'user') return undefined
      if (entry.kind === 'tool' && entry.status === 'running') return entry
    }
    return undefined
  }

  private onEvent(session: Session, event: SessionEvent): void {
    if (session !== this.agent.session) {
      // A child session's events move its parent's `subagentPlans` projection: redraw the task cards.
      if (session.header.parent?.sessionId === this.agent.id) this.tui.requestRender()
      return
    }
    foldEvent(this.state, event)
    const live = this.transcript.live
    switch (event.type) {
      case 'step/start':
        this.transcript.live = emptyLive()
        break
      case 'turn/end':
        this.transcript.live = emptyLive()
        // A queued follow-up starts at once: the call back waits for the turn that hands over to the person.
        if (event.data.reason === 'aborted' || !this.agent.queue.has('follow-up'))
          this.callBack.call({
            kind: 'turn-end',
            sessionId: session.id,
            reason: event.data.reason,
            ...(event.data.message ? { message: event.data.message } : {}),
          })
        break
      case 'assistant/message':
        this.transcript.live = { ...emptyLive(), output: live.output }
        break
      case 'tool/result':
        delete live.output[event.data.callId]
        break
    }
    this.plan.setPlan(this.state.plan, this.state.openTurn === null ? 0 : this.state.callsSincePlan)
    this.footer.info.tokens = { ...this.state.tokens }
    this.footer.info.cost = costLabel(this.state.cost)
    this.footer.info.jobs = this.state.jobs.length
    this.status.retry = this.state.retry ? retryText(this.state.retry) : undefined
    this.footer.info.contextWindow = contextWindowOf(this.options.ctx, this.agent.model)
    this.tui.requestRender()
  }

  private onDelta(agent: Agent, delta: AgentDelta): void {
    if (agent !== this.agent) return
    const live = this.transcript.live
    switch (delta.kind) {
      case 'text':
        live.text += delta.text
        break
      case 'reasoning':
        live.reasoning += delta.text
        break
      case 'tool-input':
        if (delta.name) live.preparing = delta.name
        break
      case 'tool-output': {
        // The live view shows what the log will keep: without the terminal's colour and title codes.
        const text = (live.output[delta.callId] ?? '') + stripTerminalCodes(delta.text)
        live.output[delta.callId] = text.length > LIVE_OUTPUT_CAP ? text.slice(-LIVE_OUTPUT_CAP) : text
        break
      }
    }
    this.tui.requestRender()
  }

  private onKey(data: string): { consume: boolean } | undefined {
    if (this.callBack.onInput(data)) return { consume: true }
    if (matchesKey(data, 'ctrl+c')) {
      this.onCtrlC()
      return { consume: true }
    }
    // Text typed just before an approval opens must not answer it: the prompt waits for a pause after the last key.
    if (isPrintable(data) && !this.prompt.active) this.prompt.guard.typed()
    // Enter with text in the editor sends that text (queued as steering while the turn runs): it never answers an
    // open approval, which takes Enter only from an empty editor. Alt+Enter sends it as a follow-up.
    const typing = this.editor.getText().trim() !== ''
    if (typing && matchesKey(data, 'alt+enter')) {
      this.submitKind = 'follow-up'
      this.editor.handleInput('\r')
      this.submitKind = 'steer'
      return { consume: true }
    }
    if (typing && this.prompt.active && matchesKey(data, 'enter')) return undefined
    if (matchesKey(data, 'alt+up') && this.agent.queue.size) {
      this.takeBack()
      return { consume: true }
    }
    // An open approval prompt takes its keys (arrows, digits, Enter, Esc); letters go on to the editor.
    if (this.prompt.handleKey(data)) return { consume: true }
    if (this.planFocus.handleKey(data)) return { consume: true }
    if (matchesKey(data, 'ctrl+p')) {
      this.planFocus.toggle()
      return { consume: true }
    }
    if (matchesKey(data, 'shift+tab')) {
      cycleMode(this.options.ctx, this.agent.session, (line) => this.transcript.note('info', line))
      this.tui.requestRender()
      return { consume: true }
    }
    // Enter on a menu the person has typed past (a burst of keys): close it, so Enter submits what was typed.
    if (
      matchesKey(data, 'enter') &&
      this.editor.isShowingAutocomplete() &&
      !this.completion.isCurrent(this.editor.getLines(), this.editor.getCursor())
    ) {
      this.editor.handleInput('\x1b')
      return undefined
    }
    if (matchesKey(data, 'escape')) {
      if (this.editor.isShowingAutocomplete() || (!this.running && !this.shell)) return undefined
      this.cancel()
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+o')) {
      this.transcript.expanded = !this.transcript.expanded
      this.tui.requestRender()
      return { consume: true }
    }
    // PageUp over a one-line editor (where it has nothing to page) draws earlier entries of a long session.
    if (matchesKey(data, 'pageUp') && !this.editor.getText().includes('\n') && !this.editor.isShowingAutocomplete()) {
      if (!this.transcript.showEarlier(this.options.terminal.columns)) return undefined
      this.tui.requestRender()
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+t')) {
      this.plan.toggle()
      this.tui.requestRender()
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+d') && this.editor.getText() === '') {
      void this.quit()
      return { consume: true }
    }
    return undefined
  }

  private onCtrlC(): void {
    const now = Date.now()
    if (now - this.lastCtrlC < DOUBLE_PRESS_MS) {
      void this.quit()
      return
    }
    this.lastCtrlC = now
    if (this.running || this.shell) this.cancel()
    else this.editor.setText('')
    this.status.show('Press Ctrl+C again to exit', DOUBLE_PRESS_MS)
    this.tui.requestRender()
    setTimeout(() => this.tui.requestRender(), DOUBLE_PRESS_MS + 50).unref()
  }

  /** Esc: the turn ends `aborted` and the bash tool kills its process group. The agent's queue is kept, and says so. */
  cancel(): void {
    this.agent.cancel()
    this.shell?.controller.abort(new Error('cancelled'))
    if (this.agent.queue.size) this.transcript.note('info', queueKeptWords(this.agent.queue.size).text)
    if (this.running || this.shell) this.status.cancelling = true
    this.tui.requestRender()
  }

  /** Alt+Up: the last queued prompt comes back into the editor (before what is typed there), to edit or drop. */
  private takeBack(): void {
    const last = this.agent.queue.list().at(-1)
    const item = last && this.agent.queue.remove(last.id)
    if (!item) return
    const text = item.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    const current = this.editor.getText()
    this.editor.setText(current ? `${text}\n${current}` : text)
    this.tui.requestRender()
  }

  submit(raw: string): void {
    const text = raw.trim()
    if (!text || this.closing) return
    this.editor.addToHistory(text)
    if (text.startsWith('/')) {
      this.command(text)
      this.tui.requestRender()
      return
    }
    const command = userCommandOf(text)
    if (this.shell || (command !== undefined && this.running)) {
      // Only prompts queue (the agent's queue holds messages, not commands): the text stays in the editor.
      this.busy()
      this.editor.setText(text)
    } else if (command !== undefined) {
      void this.userCommand(command)
    } else {
      // An image path that cannot be attached: one line, and the text stays in the editor.
      const built = this.attachments.content(text)
      if ('error' in built) {
        this.transcript.note('error', built.error)
        this.editor.setText(raw)
      } else this.send(built.content, text, this.submitKind)
    }
    this.tui.requestRender()
  }

  /** Through the agent's queue: idle, a turn starts; while one runs, steering (Enter) or a follow-up (Alt+Enter). */
  private send(content: ContentBlock[], text: string, kind: QueueKind): void {
    const agent = this.agent
    // Refused before its turn (images for a model without vision): one line, and the prompt goes back to the editor.
    const refused = (error: unknown) => {
      if (agent !== this.agent) return
      this.transcript.note('error', error instanceof Error ? error.message : String(error))
      if (!this.editor.getText()) this.editor.setText(text)
    }
    try {
      agent.send(content, kind).turn?.catch(refused)
    } catch (error) {
      refused(error)
      return
    }
    this.track(agent)
  }

  /** A command file's expansion or a built-in's prompt (`/init`): a turn of its own, with its command and model. */
  private promptCommand(text: string, options: { command?: string; model?: LlmAdapter }): void {
    if (this.busy()) return
    const agent = this.agent
    agent.prompt(text, options).catch((error: unknown) => {
      if (agent === this.agent) this.transcript.note('error', error instanceof Error ? error.message : String(error))
    })
    this.track(agent)
  }

  /** Marks the UI busy until the agent is idle again, its queued follow-ups' turns included. */
  private track(agent: Agent): void {
    if (this.running || agent !== this.agent) return
    this.status.runningSince = Date.now()
    this.ticker ??= setInterval(() => this.tui.requestRender(), 100)
    const running: Promise<void> = agent.whenIdle().finally(() => {
      if (this.running !== running) return
      this.running = undefined
      this.status.runningSince = undefined
      this.status.cancelling = false
      if (this.ticker && !this.shell) clearInterval(this.ticker)
      if (!this.shell) this.ticker = undefined
      this.tui.requestRender()
    })
    this.running = running
  }

  private command(text: string): void {
    this.transcript.note('command', text)
    const parsed = parseCommand(this.commands, text)
    if ('unknown' in parsed) {
      const known = parsed.suggestion ? ` (did you mean /${parsed.suggestion}?)` : ''
      this.transcript.note('warn', `Unknown command /${parsed.unknown}${known}. /help lists the commands.`)
      return
    }
    const failed = (error: unknown) =>
      this.actions.note('error', `/${parsed.command.name} failed: ${escapeLine(errorLine(error, 300))}`)
    try {
      void Promise.resolve(parsed.command.run(this.actions, parsed.arg)).catch(failed)
    } catch (error) {
      failed(error)
    }
  }

  /** What the slash commands (commands/) may do with this app. */
  private commandActions(): CommandActions {
    const app = this
    return {
      get ctx() {
        return app.options.ctx
      },
      get cwd() {
        return app.options.cwd
      },
      get agent() {
        return app.agent
      },
      get tui() {
        return app.tui
      },
      get commands() {
        return app.commands
      },
      note: (level: NoteLevel, text: string) => {
        app.transcript.note(level, text)
        app.tui.requestRender()
      },
      busy: () => app.busy(),
      turnRunning: () => app.running !== undefined,
      replaceAgent: (make, message) => app.replaceAgent(make, message),
      prompt: (text, options) => app.promptCommand(text, options),
      setDraft: (text) => app.editor.setText(text),
      jobs: () => app.state.jobs,
      quit: () => app.quit(),
      model: {
        get current() {
          return app.footer.info.model
        },
        get configured() {
          return app.options.configuredModel ?? app.options.modelSpec
        },
        show: (spec) => {
          app.footer.info.model = spec
          app.footer.info.label = scriptedLabel(spec)?.label
        },
        make: (spec, baseUrl) => app.makeModel(spec, baseUrl),
      },
    }
  }

  private busy(): boolean {
    if (!this.running && !this.shell) return false
    this.transcript.note('warn', `${this.running ? 'A turn' : 'A command'} is running: press Esc to cancel it first.`)
    return true
  }

  /**
   * `!command`: runs it through the bash tool under the same deny rules and sandbox as the model's calls, without
   * asking (the person typed it), shows it live, and records it on the log as a user message for the next turn.
   */
  private async userCommand(command: string): Promise<void> {
    if (!command) {
      this.transcript.note('warn', USER_COMMAND_USAGE)
      return
    }
    if (this.busy()) return
    const agent = this.agent
    const controller = new AbortController()
    let finished = () => {}
    this.shell = { controller, done: new Promise<void>((done) => (finished = done)) }
    const view = { command, output: '' }
    this.shellView.running = view
    this.status.runningSince = Date.now()
    this.ticker ??= setInterval(() => this.tui.requestRender(), 100)
    this.tui.requestRender()
    try {
      const outcome = await runUserCommand({
        ctx: this.options.ctx,
        agent,
        command,
        signal: controller.signal,
        onUpdate: (text) => {
          const all = view.output + text
          view.output = all.length > LIVE_OUTPUT_CAP ? all.slice(-LIVE_OUTPUT_CAP) : all
          this.tui.requestRender()
        },
      })
      this.shellView.running = undefined
      if (outcome.kind === 'refused') {
        const words = userCommandWords(escapeLine(command), { refused: escapeLine(outcome.reason) })
        this.transcript.note(words.tone, words.text)
      } else if (agent === this.agent && !this.closing) {
        recordUserCommand(agent, command, outcome.output)
      }
    } catch (error) {
      const words = userCommandWords(escapeLine(command), { failed: escapeLine(errorLine(error, 300)) })
      this.transcript.note(words.tone, words.text)
    } finally {
      this.shellView.running = undefined
      this.shell = undefined
      finished()
      this.status.runningSince = undefined
      this.status.cancelling = false
      if (this.ticker && !this.running) clearInterval(this.ticker)
      if (!this.running) this.ticker = undefined
      this.tui.requestRender()
    }
  }

  private makeModel(spec: string, baseUrl?: string): Promise<LlmAdapter> {
    return this.options.createModel
      ? this.options.createModel(spec, baseUrl)
      : this.options.ctx.llm.create(spec, { cwd: this.options.cwd, ...(baseUrl ? { baseUrl } : {}) })
  }

  /** Swaps the open agent: the old one is closed (its file flushed, its lock released) only once the new one opened. */
  private replaceAgent(make: () => { agent: Agent; repairs: string[] }, message: string): boolean {
    let next: { agent: Agent; repairs: string[] }
    try {
      next = make()
    } catch (error) {
      this.transcript.note('error', error instanceof Error ? error.message : String(error))
      return false
    }
    const previous = this.agent
    this.options.ctx.agents.close(previous)
    this.open(next.agent)
    this.transcript.note('info', message)
    for (const repair of next.repairs) this.transcript.note('warn', repair)
    return true
  }

  /** Cancels a running turn (waiting a little for it to end on the log), stops drawing and resolves `run`. */
  async quit(code = 0): Promise<void> {
    if (this.closing) return
    this.closing = true
    if (this.running || this.shell) {
      this.agent.cancel()
      this.shell?.controller.abort(new Error('cancelled'))
      await Promise.race([Promise.all([this.running, this.shell?.done]), new Promise((done) => setTimeout(done, 3000))])
    }
    if (this.ticker) clearInterval(this.ticker)
    // Cancelling the turn ended its asks; anything still waiting (a turn that did not stop in time) is declined.
    this.prompt.denyAll()
    for (const dispose of this.disposers.splice(0)) dispose()
    this.callBack.stop()
    this.tui.stop()
    this.exit?.(code)
  }
}
