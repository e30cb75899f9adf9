import type { Context } from 'cordis'
import { type AutocompleteItem, Editor, matchesKey, TUI, type Terminal } from '@mariozechner/pi-tui'
import { lastModel, type Agent, type AgentDelta, type LlmAdapter } from '@keel/agent'
import type { Compaction } from '@keel/compaction'
import { closest, onNotice, stripTerminalCodes, type Session, type SessionEvent } from '@keel/session'
import { lastPlan, planHeader, planLines, standingPlan } from '@keel/todo'
import { helpText, parseCommand, slashCommands, COMMANDS } from './commands.ts'
import { KeelAutocomplete, PathIndex } from './complete.ts'
import { modelList, parseModelArg, scriptedLabel } from './model-switch.ts'
import { recordUserCommand, runUserCommand } from '@keel/door/user-command'
import { ShellRunView } from './user-shell.ts'
import { emptyTranscript, foldEvent, foldEvents, promptsOf, type TranscriptState } from '@keel/door/transcript'
import { contextWindowOf, Footer } from './footer.ts'
import { isPrintable } from './deliberate.ts'
import { cycleMode } from './mode-cycle.ts'
import { PermissionPrompt } from './permission-prompt.ts'
import { PlanPanel } from './plan-panel.ts'
import { openRewindPicker } from './rewind-picker.ts'
import { errorLine } from '@keel/session/text'
import { escapeLine } from './safe.ts'
import { StatusLine } from './status.ts'
import { costLabel } from '@keel/session/cost'
import { retryText } from '@keel/llm/retry-text'
import { style } from './style.ts'
import { subagentPlan } from './subagent.ts'
import { editorTheme } from './theme.ts'
import { emptyLive, TranscriptView } from './transcript.ts'

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
  readonly prompt: PermissionPrompt
  readonly status = new StatusLine()
  readonly footer: Footer
  /** A `!command` running now: its live output, above the approval prompt and the editor. */
  readonly shellView = new ShellRunView()
  private shell: { controller: AbortController; done: Promise<void> } | undefined
  private readonly completion: KeelAutocomplete
  agent: Agent
  state: TranscriptState = emptyTranscript()
  private queue: string[] = []
  private running: Promise<unknown> | undefined
  private ticker: ReturnType<typeof setInterval> | undefined
  private lastCtrlC = 0
  private readonly disposers: (() => void)[] = []
  private exit: ((code: number) => void) | undefined
  private closing = false

  constructor(private readonly options: AppOptions) {
    const { ctx, terminal } = options
    this.agent = options.agent
    this.tui = new TUI(terminal)
    this.transcript = new TranscriptView({
      present: (name, args) => ctx.tools.present(name, args),
      subagentPlan: (callId) => subagentPlan(ctx, this.agent.session, callId),
      requestRender: () => this.tui.requestRender(),
    })
    this.transcript.banner = [
      `${style.bold('Keel')} ${style.dim(options.version)}  ${style.dim('/help for commands · esc cancels · shift+tab mode · ctrl+c twice exits')}`,
      ...(options.intro ? options.intro.split('\n').map((line) => style.yellow(line)) : []),
      ...instructionsLine(options.agent),
    ]
    this.status.activeTool = () => this.activeTool()
    this.status.asking = () => this.prompt.active !== undefined
    this.editor = new Editor(this.tui, editorTheme)
    // Typing `/model ` offers the providers (and the model in use) as its argument.
    const commands = slashCommands().map((command) =>
      command.name === 'model'
        ? { ...command, getArgumentCompletions: (prefix: string) => this.modelCompletions(prefix) }
        : command,
    )
    this.completion = new KeelAutocomplete(commands, new PathIndex(options.cwd))
    this.editor.setAutocompleteProvider(this.completion)
    this.editor.onSubmit = (text) => this.submit(text)
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
      this.footer,
    ])
      this.tui.addChild(child)
    this.tui.setFocus(this.editor)
    this.tui.addInputListener((data) => this.onKey(data))
    this.disposers.push(
      ctx.on('session/event', (session, event) => this.onEvent(session, event)),
      ctx.on('agent/delta', (agent, delta) => this.onDelta(agent, delta)),
      // Plugins' one-line notices for the person (`keel/notice`): an MCP server down, checkpoints off, …
      onNotice(ctx, (notice) => this.warn(notice.text)),
      ctx.on('permission/mode', (mode) => {
        this.footer.info.mode = mode
        this.tui.requestRender()
      }),
    )
    // While the UI runs it is how Keel asks; without @keel/permissions in the composition nothing asks.
    const permissions = ctx.get('permissions')
    if (permissions) {
      this.disposers.push(permissions.setAsker(this.prompt.asker))
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
    this.state = foldEvents(agent.session.events)
    this.transcript.reset(this.state)
    this.plan.setPlan(this.state.plan, this.state.openTurn === null ? 0 : this.state.callsSincePlan)
    this.footer.info = {
      ...this.footer.info,
      sessionId: agent.id,
      tokens: { ...this.state.tokens },
      cost: costLabel(this.state.cost),
      contextWindow: contextWindowOf(this.options.ctx, agent.model),
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
      case 'turn/end':
        this.transcript.live = emptyLive()
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
    if (matchesKey(data, 'ctrl+c')) {
      this.onCtrlC()
      return { consume: true }
    }
    // Text typed just before an approval opens must not answer it: the prompt waits for a pause after the last key.
    if (isPrintable(data) && !this.prompt.active) this.prompt.guard.typed()
    // An open approval prompt takes its keys (arrows, digits, Enter, Esc); letters go on to the editor.
    if (this.prompt.handleKey(data)) return { consume: true }
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

  /** Esc: the turn ends `aborted` and the bash tool kills its process group. Queued prompts go back to the editor. */
  cancel(): void {
    this.agent.cancel()
    this.shell?.controller.abort(new Error('cancelled'))
    if (this.queue.length) {
      const current = this.editor.getText()
      this.editor.setText([...this.queue, ...(current ? [current] : [])].join('\n\n'))
      this.queue = []
      this.status.queued = 0
    }
    if (this.running || this.shell) this.status.cancelling = true
    this.tui.requestRender()
  }

  submit(raw: string): void {
    const text = raw.trim()
    if (!text || this.closing) return
    this.editor.addToHistory(text)
    if (text.startsWith('/')) {
      this.command(text)
    } else if (this.running || this.shell) {
      this.queue.push(text)
      this.status.queued = this.queue.length
    } else {
      this.dispatch(text)
    }
    this.tui.requestRender()
  }

  /** A prompt starts a turn; `!command` runs the command. */
  private dispatch(text: string): void {
    if (text.startsWith('!')) void this.userCommand(text.slice(1).trim())
    else this.send(text)
  }

  private send(text: string): void {
    const agent = this.agent
    this.status.runningSince = Date.now()
    this.ticker ??= setInterval(() => this.tui.requestRender(), 100)
    this.running = agent
      .prompt(text)
      .catch((error: unknown) => {
        if (agent === this.agent) this.transcript.note('error', error instanceof Error ? error.message : String(error))
      })
      .finally(() => {
        this.running = undefined
        this.status.runningSince = undefined
        this.status.cancelling = false
        if (this.ticker) clearInterval(this.ticker)
        this.ticker = undefined
        const next = this.queue.shift()
        this.status.queued = this.queue.length
        if (next !== undefined && !this.closing && agent === this.agent) this.dispatch(next)
        this.tui.requestRender()
      })
  }

  private command(text: string): void {
    this.transcript.note('command', text)
    const parsed = parseCommand(text)
    if ('unknown' in parsed) {
      const known = parsed.unknown && closest(parsed.unknown, Object.keys(COMMANDS))
      this.transcript.note(
        'warn',
        `Unknown command /${parsed.unknown}${known ? ` (did you mean /${known}?)` : ''}. /help lists the commands.`,
      )
      return
    }
    switch (parsed.name) {
      case 'help':
        this.transcript.note('info', helpText())
        return
      case 'quit':
        void this.quit()
        return
      case 'plan':
        this.showLastPlan()
        return
      case 'compact':
        void this.compact()
        return
      case 'sessions':
        this.listSessions()
        return
      case 'new': {
        if (this.busy()) return
        const model = this.agent.model
        this.replaceAgent(() => {
          const agent = this.options.ctx.agents.create({
            cwd: this.options.cwd,
            model,
            recordModel: { spec: this.footer.info.model },
          })
          // A model switched to earlier in this run carries over, and is recorded so reopening the session keeps it.
          const spec = this.footer.info.model
          if (spec !== this.configuredModel) agent.switchModel(model, spec)
          return { agent, repairs: [] }
        }, 'Started a new session.')
        return
      }
      case 'resume':
        if (this.busy()) return
        void this.resume(parsed.arg)
        return
      case 'model':
        if (this.busy()) return
        void this.switchModel(parsed.arg)
        return
      case 'rewind':
        if (this.busy()) return
        openRewindPicker({
          ctx: this.options.ctx,
          tui: this.tui,
          session: this.agent.session,
          note: (level, text) => {
            this.transcript.note(level, text)
            this.tui.requestRender()
          },
          continueIn: (fork, message, draft) => {
            this.replaceAgent(() => this.options.ctx.agents.resume(fork, { model: this.agent.model }), message)
            if (this.agent.id === fork) this.editor.setText(draft)
          },
        })
        return
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
      this.transcript.note('warn', 'Usage: !<command> runs a shell command here; the model sees it and its output.')
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
        this.transcript.note('warn', `! ${escapeLine(command)} was not run: ${escapeLine(outcome.reason)}`)
      } else if (agent === this.agent && !this.closing) {
        recordUserCommand(agent, command, outcome.output)
      }
    } catch (error) {
      this.transcript.note('error', `! ${escapeLine(command)} failed: ${escapeLine(errorLine(error, 300))}`)
    } finally {
      this.shellView.running = undefined
      this.shell = undefined
      finished()
      this.status.runningSince = undefined
      this.status.cancelling = false
      if (this.ticker && !this.running) clearInterval(this.ticker)
      if (!this.running) this.ticker = undefined
      const next = this.queue.shift()
      this.status.queued = this.queue.length
      if (next !== undefined && !this.closing && agent === this.agent) this.dispatch(next)
      this.tui.requestRender()
    }
  }

  /** `/compact`: asks @keel/compaction (when composed) to summarise older turns; the marker comes from the log. */
  private async compact(): Promise<void> {
    const compaction: Compaction | undefined = this.options.ctx.get('compaction')
    if (!compaction) {
      this.transcript.note('warn', 'Compaction is not loaded (add @keel/compaction to the composition).')
      return
    }
    this.transcript.note('info', 'Compacting…')
    this.tui.requestRender()
    const outcome = await compaction.compact(this.agent)
    this.transcript.note(
      outcome.ok ? 'info' : 'warn',
      outcome.ok
        ? `Summarised ${outcome.summarised} messages: ~${outcome.before} → ~${outcome.after} tokens${outcome.applied === 'next-request' ? ' (takes effect with your next message)' : ''}.`
        : `Not compacted: ${escapeLine(outcome.error ?? 'unknown reason')}`,
    )
    this.tui.requestRender()
  }

  private showLastPlan(): void {
    const events = this.agent.session.events
    const todos = lastPlan(events)
    if (!todos) {
      this.transcript.note('info', 'No plan has been written in this session yet.')
      return
    }
    const standing = standingPlan(events) !== null
    const where = standing ? 'standing' : 'cleared when a later turn started'
    this.transcript.note(
      'info',
      [`Last ${planHeader(todos)} (${where})`, ...planLines(todos).map((line) => `  ${line}`)].join('\n'),
    )
  }

  private listSessions(): void {
    const sessions = this.options.ctx.sessions.list(this.options.cwd).filter((summary) => !summary.parent)
    if (!sessions.length) {
      this.transcript.note('info', 'No sessions in this directory yet.')
      return
    }
    const lines = sessions.slice(0, 20).map((summary) => {
      const when = new Date(summary.updatedAt).toISOString().replace('T', ' ').slice(0, 16)
      const mark = summary.id === this.agent.id ? '*' : ' '
      return `${mark} ${summary.id}  ${when}  ${escapeLine(summary.title || '(no prompt)').slice(0, 60)}`
    })
    if (sessions.length > 20) lines.push(`  … and ${sessions.length - 20} older`)
    lines.push('', '/resume <id or prefix> opens one; * marks this session.')
    this.transcript.note('info', lines.join('\n'))
  }

  private async resume(arg: string): Promise<void> {
    if (!arg) {
      this.transcript.note('warn', 'Usage: /resume <session id or unique prefix> (see /sessions)')
      return
    }
    const matches = this.options.ctx.sessions.list(this.options.cwd).filter((summary) => summary.id.startsWith(arg))
    const id = matches.length === 1 ? matches[0]!.id : arg
    if (matches.length > 1) {
      this.transcript.note('warn', `${matches.length} sessions start with ${arg}; type more of the id.`)
      return
    }
    if (id === this.agent.id) {
      this.transcript.note('info', 'That is the session already open.')
      return
    }
    // The model the session's log records (the one it started on, or its last /model choice); otherwise it continues
    // with the model in use.
    let model = this.agent.model
    let chosen: { spec: string; baseUrl?: string } | undefined
    try {
      chosen = lastModel(this.options.ctx.sessions.read(id).events)
    } catch {
      chosen = undefined // an unknown id: agents.resume below says so
    }
    let spec = this.footer.info.model
    if (chosen && chosen.spec !== spec) {
      try {
        model = await this.makeModel(chosen.spec, chosen.baseUrl)
        spec = chosen.spec
      } catch (error) {
        this.transcript.note(
          'warn',
          `That session used ${escapeLine(chosen.spec)}, which cannot start: ${escapeLine(errorLine(error, 300))}`,
        )
      }
    }
    if (this.running) return void this.busy()
    const resumed = `Resumed session ${id} on ${escapeLine(spec)}.`
    if (this.replaceAgent(() => this.options.ctx.agents.resume(id, { model, recordModel: { spec } }), resumed))
      this.showModel(spec)
    this.tui.requestRender()
  }

  private get configuredModel(): string {
    return this.options.configuredModel ?? this.options.modelSpec
  }

  /** The footer names the model in use, and labels a scripted one. */
  private showModel(spec: string): void {
    this.footer.info.model = spec
    this.footer.info.label = scriptedLabel(spec)?.label
  }

  private modelCompletions(prefix: string): AutocompleteItem[] {
    const providers = this.options.ctx.get('llm')?.providerNames() ?? []
    const current = this.footer.info.model
    const items = [current, ...providers.map((name) => `${name}/`)]
      .filter((value, i, all) => all.indexOf(value) === i && value.startsWith(prefix.trim()))
      .map((value) => ({ value, label: escapeLine(value) }))
    return items
  }

  private makeModel(spec: string, baseUrl?: string): Promise<LlmAdapter> {
    return this.options.createModel
      ? this.options.createModel(spec, baseUrl)
      : this.options.ctx.llm.create(spec, { cwd: this.options.cwd, ...(baseUrl ? { baseUrl } : {}) })
  }

  /** `/model`: lists the providers, or switches the open agent's model for the following turns (`session/model`). */
  private async switchModel(arg: string): Promise<void> {
    const providers = this.options.ctx.get('llm')?.providerNames() ?? []
    const current = this.footer.info.model
    const parsed = parseModelArg(arg, providers)
    if (parsed.kind === 'list') {
      this.transcript.note('info', modelList(providers, current, this.configuredModel))
      return
    }
    if (parsed.kind === 'invalid') {
      this.transcript.note('warn', parsed.message)
      return
    }
    if (parsed.spec === current) {
      this.transcript.note('info', `Already using ${escapeLine(current)}.`)
      return
    }
    let model: LlmAdapter
    try {
      model = await this.makeModel(parsed.spec)
    } catch (error) {
      this.transcript.note('error', `Cannot switch to ${escapeLine(parsed.spec)}: ${escapeLine(errorLine(error, 300))}`)
      this.tui.requestRender()
      return
    }
    // A prompt sent while the adapter was being made started a turn: that turn keeps its model.
    if (this.busy()) return void this.tui.requestRender()
    try {
      this.agent.switchModel(model, parsed.spec)
    } catch (error) {
      this.transcript.note('error', `Cannot switch to ${escapeLine(parsed.spec)}: ${escapeLine(errorLine(error, 300))}`)
      this.tui.requestRender()
      return
    }
    this.showModel(parsed.spec)
    this.transcript.note('info', `Model: ${escapeLine(parsed.spec)} from the next turn on.`)
    this.tui.requestRender()
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
    this.tui.stop()
    this.exit?.(code)
  }
}
