import type { Context } from 'cordis'
import { imageRefusal, LlmError, MessageAssembler, type LlmAdapter } from '@keel/llm'
import {
  closeOpenTurn,
  toolCallsOf,
  type ContentBlock,
  type Session,
  type ToolCallBlock,
  type TurnEndReason,
  errorLine,
} from '@keel/session'
import type { PermissionGate, SandboxLevel, ToolAgent, ToolExecution, ToolResult } from '@keel/tools'
import type { Instructions } from '@keel/settings'
import type { PreToolVerdict, TurnHooks } from './hooks.ts'
import { systemPrompt } from './prompt.ts'
import type {} from './model-choice.ts' // the session/model event
import { PromptQueue, type QueueKind, type QueuedPrompt } from './queue.ts'
import type {} from './retry-notice.ts' // the model/retry event
import { requestCost } from '@keel/session/cost'

export type AgentStatus = 'idle' | 'running' | 'disposed'

/** Live-only output for UIs; the log holds whole messages. */
export type AgentDelta =
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'tool-input'; index: number; name?: string; text: string }
  | { kind: 'tool-output'; callId: string; text: string }

export interface TurnResult {
  reason: TurnEndReason
  /** The one-line reason when `reason` is `error`. */
  message?: string
  /** The assistant's final text. */
  text: string
  turn: number
  steps: number
  toolCalls: number
}

export interface AgentOptions {
  session: Session
  model: LlmAdapter
  cwd: string
  depth?: number
  /** Tools this agent's model is not offered (and may not call). */
  excludeTools?: readonly string[]
  maxSteps?: number
  maxTokens?: number
  /** Replaces the whole system prompt (instructions included). */
  system?: string
  /** Project instructions (AGENTS.md / CLAUDE.md) for the system prompt; none when undefined. */
  instructions?: Instructions
  /**
   * The model as the person named it, recorded on the log (`session/model`) before the first turn of a session that
   * records none yet, so reopening it (`-c`, `-r`, `/resume`) uses the same model and server.
   */
  recordModel?: { spec: string; baseUrl?: string }
}

type Verdict = { allowed: true; sandbox?: SandboxLevel } | { allowed: false; message: string }

const ABORTED_BEFORE_START = 'Error: the turn was cancelled before this tool call started.'

/**
 * One agent: a session plus the loop. A turn is `turn/start` → steps → `turn/end`; a step is one model request
 * and the tool calls it asked for. `tool/call` is logged before a tool runs and `tool/result` after, in model order.
 */
export class Agent implements ToolAgent {
  readonly session: Session
  readonly cwd: string
  readonly depth: number
  model: LlmAdapter
  status: AgentStatus = 'idle'
  private controller: AbortController | undefined
  private lastTurn: number
  private running: Promise<TurnResult> | undefined
  /** Every tool-call id on this session's log: a reply that repeats one gets a fresh id (see uniqueCallId). */
  private readonly callIds = new Set<string>()
  /** Built on the first request and kept: prompt caches need the same system text on every request. */
  private system: string | undefined
  /** The running turn's own model, when its prompt named one (a command file's `model`). */
  private turnModel: LlmAdapter | undefined
  /** Prompts sent while a turn runs (see `send`); every door uses this one queue. */
  readonly queue: PromptQueue

  constructor(
    private readonly ctx: Context,
    readonly options: AgentOptions,
  ) {
    this.session = options.session
    this.cwd = options.cwd
    this.depth = options.depth ?? 0
    this.model = options.model
    this.queue = new PromptQueue((items) => this.ctx.emit('agent/queue', this, items))
    this.lastTurn = 0
    for (const event of this.session.events) {
      if (event.type === 'turn/start') this.lastTurn = event.data.turn
      else if (event.type === 'tool/call') this.callIds.add(event.data.callId)
    }
  }

  get id(): string {
    return this.session.id
  }

  /** The instruction files in this agent's system prompt. */
  get instructions(): Instructions {
    return this.options.instructions ?? { text: '', files: [] }
  }

  /** The system prompt of every request this agent makes. */
  systemText(): string {
    if (this.system === undefined) {
      // Plugins add their sections once (the skills' names and descriptions); later requests reuse the same bytes.
      const sections: string[] = []
      this.ctx.emit('agent/system', this, sections)
      const base = this.options.system ?? systemPrompt(this.cwd, new Date(), this.instructions.text)
      this.system = [base, ...sections.filter(Boolean)].join('\n\n')
    }
    return this.system
  }

  /** `ctx.hooks` when a plugin runs the person's hook scripts (@keel/extend). */
  private get hooks(): TurnHooks | undefined {
    return this.ctx.get('hooks')
  }

  /**
   * Runs one turn for a user prompt. One turn at a time per agent. `command`: the slash command the prompt was
   * expanded from; `model`: the model for this turn only (a command file's `model`), not recorded as the session's;
   * `source: 'plan'`: the prompt is the harness's, written for the person's answer to a plan proposal (@keel/todo).
   */
  prompt(
    content: string | ContentBlock[],
    options: { command?: string; model?: LlmAdapter; source?: 'plan' } = {},
  ): Promise<TurnResult> {
    if (this.status === 'disposed') return Promise.reject(new Error(`agent ${this.id} is disposed`))
    if (this.running) return Promise.reject(new Error(`agent ${this.id} is already running a turn`))
    const blocks: ContentBlock[] = typeof content === 'string' ? [{ type: 'text', text: content }] : content
    const refused = this.refuseImages(blocks)
    if (refused) return Promise.reject(refused)
    const record = this.options.recordModel
    if (record && !this.session.events.some((event) => event.type === 'session/model'))
      this.session.append('session/model', {
        spec: record.spec,
        ...(record.baseUrl ? { baseUrl: record.baseUrl } : {}),
      })
    this.controller = new AbortController()
    this.turnModel = options.model
    this.running = this.turn(blocks, this.controller.signal, options).finally(() => {
      this.running = undefined
      this.turnModel = undefined
      this.controller = undefined
      if (this.status === 'running') this.setStatus('idle')
    })
    void this.running.then((result) => this.runFollowUp(result))
    return this.running
  }

  /**
   * What a door calls for a prompt the person sends: idle, it starts a turn; while a turn runs, it is queued as
   * `kind` (steering by default) and delivered as the queue's rules say. Never taken as an approval's answer.
   */
  send(
    content: string | ContentBlock[],
    kind: QueueKind = 'steer',
  ): { turn: Promise<TurnResult>; queued?: undefined } | { queued: QueuedPrompt; turn?: undefined } {
    if (this.status === 'disposed') throw new Error(`agent ${this.id} is disposed`)
    const blocks: ContentBlock[] = typeof content === 'string' ? [{ type: 'text', text: content }] : content
    const refused = this.refuseImages(blocks)
    if (refused) throw refused
    if (!this.running) return { turn: this.prompt(blocks) }
    return { queued: this.queue.add(kind, blocks) }
  }

  /**
   * A follow-up queued during a turn runs as the next turn, unless the turn was cancelled: then the queue is kept
   * (the door says so) until the person's next prompt, whose turn delivers the steering and then the follow-ups.
   * Steering that came after the turn's last step (while its end was written: the hooks, the end's waits) reached no
   * step: it is the next turn's prompt, before any follow-up, as it would have come before them in the turn.
   */
  private runFollowUp(result: TurnResult): void {
    if (result.reason === 'aborted' || this.status === 'disposed' || this.running) return
    const next = this.queue.takeFirst('steer') ?? this.queue.takeFirst('follow-up')
    if (next) this.prompt(next.content).catch(() => {})
  }

  /** A prompt with images for a model without vision: refused before anything is logged or sent. */
  private refuseImages(blocks: readonly ContentBlock[]): LlmError | undefined {
    if (!blocks.some((block) => block.type === 'image')) return undefined
    const line = imageRefusal(this.model)
    return line ? new LlmError('config', line) : undefined
  }

  /** Cancels the running turn: the request and every running tool see the abort; the turn ends `aborted`. */
  cancel(): void {
    this.controller?.abort(new Error('cancelled'))
  }

  /**
   * Uses `model` from the next turn on and records the choice on the log (`session/model`), so a reopened session
   * resumes with it. Only between turns: a turn keeps the model it started with.
   */
  switchModel(model: LlmAdapter, spec: string): void {
    if (this.status === 'disposed') throw new Error(`agent ${this.id} is disposed`)
    if (this.running) throw new Error('a turn is running; the model can be switched between turns')
    this.session.append('session/model', { spec })
    this.model = model
  }

  /** Settles when no turn runs, queued follow-ups included. */
  async whenIdle(): Promise<void> {
    while (this.running) {
      await this.running.catch(() => {})
      // A follow-up starts on the turn's settlement; let it register before looking again.
      await Promise.resolve()
    }
  }

  dispose(): void {
    this.cancel()
    this.status = 'disposed'
  }

  private setStatus(status: AgentStatus): void {
    this.status = status
    this.ctx.emit('agent/status', this, status)
  }

  private async turn(
    content: ContentBlock[],
    signal: AbortSignal,
    { command, source = 'user' }: { command?: string; source?: 'user' | 'plan' },
  ): Promise<TurnResult> {
    const session = this.session
    const turn = this.lastTurn + 1
    const maxSteps = this.options.maxSteps ?? 200
    this.setStatus('running')
    const result: TurnResult = { reason: 'completed', text: '', turn, steps: 0, toolCalls: 0 }
    try {
      // A turn whose turn/end could not be written (a full disk) is still open: close it first, as a resume would.
      if (session.last && session.last.type !== 'turn/end') closeOpenTurn(session)
      session.append('turn/start', { turn, trigger: 'prompt' })
    } catch (error) {
      return { ...result, reason: 'error', message: errorLine(error) } // nothing of this turn is on the log
    }
    this.lastTurn = turn
    try {
      const submitted = await this.hooks?.promptSubmit(this, textOfBlocks(content), signal)
      if (submitted?.block !== undefined) {
        result.reason = 'error'
        result.message = `a UserPromptSubmit hook blocked the prompt: ${submitted.block}`
        return result
      }
      let stopHookActive = false
      for (let step = 1; ; step++) {
        if (step > maxSteps) {
          result.reason = 'step-limit'
          break
        }
        result.steps = step
        session.append('step/start', { turn, step })
        let failed = false
        try {
          if (step === 1)
            session.append(
              'user/message',
              { message: { role: 'user', content, source, ...(command ? { command } : {}) } },
              { surfaceOp: { op: 'append' } },
            )
          if (step === 1 && submitted?.context) this.appendContext(submitted.context)
          this.deliverSteering()
          const outcome = await this.step(turn, step, signal, result)
          // A steering message that arrived while the model was answering is delivered in one more step.
          if (outcome === 'completed' && this.queue.has('steer')) continue
          if (outcome === 'completed') {
            // A Stop hook may ask for more: its reason goes to the model, and the turn takes one more step.
            const more = await this.hooks?.turnStop(this, stopHookActive, signal)
            if (more !== undefined && !signal.aborted) {
              stopHookActive = true
              this.appendContext(more)
              continue
            }
          }
          if (outcome) {
            result.reason = outcome
            break
          }
        } catch (error) {
          failed = true
          throw error
        } finally {
          // A failed append (disk full) usually fails this one too: the first error is the one to report.
          try {
            session.append('step/end', { turn, step })
          } catch (error) {
            // biome-ignore lint/correctness/noUnsafeFinally: a failed step/end is the error to report when the step itself succeeded
            if (!failed) throw error
          }
        }
      }
    } catch (error) {
      if (signal.aborted) {
        result.reason = 'aborted'
      } else {
        result.reason = 'error'
        result.message = errorLine(error)
      }
    } finally {
      try {
        await this.ctx.parallel('agent/before-turn-end', this)
      } catch (error) {
        if (result.reason !== 'error') Object.assign(result, { reason: 'error', message: errorLine(error) })
      }
      try {
        session.append('turn/end', {
          turn,
          reason: result.reason,
          ...(result.message ? { message: result.message } : {}),
        })
      } catch (error) {
        // The turn stays open on the log, as in memory; the next prompt (or a resume) closes it as interrupted.
        if (result.reason !== 'error') Object.assign(result, { reason: 'error', message: errorLine(error) })
      }
    }
    return result
  }

  /** Text a hook adds for the model, as harness-made context. */
  private appendContext(text: string): void {
    this.session.append(
      'user/message',
      { message: { role: 'user', content: [{ type: 'text', text }], source: 'context' } },
      { surfaceOp: { op: 'append' } },
    )
  }

  /** Queued steering messages land as user messages before the step's model request, oldest first. */
  private deliverSteering(): void {
    for (const item of this.queue.take('steer'))
      this.session.append(
        'user/message',
        { message: { role: 'user', content: item.content, source: 'steer' } },
        { surfaceOp: { op: 'append' } },
      )
  }

  /** One model request and its tool calls. Returns why the turn ends, or undefined to continue. */
  private async step(
    turn: number,
    step: number,
    signal: AbortSignal,
    result: TurnResult,
  ): Promise<TurnEndReason | undefined> {
    await this.ctx.parallel('agent/prepare', this, signal)
    const exclude = this.options.excludeTools ?? []
    const tools = this.ctx.tools.schemas(exclude)
    const request = {
      system: this.systemText(),
      messages: this.session.deriveMessages(),
      tools,
      sessionId: this.id,
      ...(this.options.maxTokens ? { maxTokens: this.options.maxTokens } : {}),
    }
    this.ctx.emit('agent/request', this, request)
    const assembler = new MessageAssembler()
    // A wait before a retry of this request goes on the log, so every door can say why nothing streams.
    const offRetry = this.ctx.on('llm/retry', (notice, sessionId) => {
      if (sessionId === this.id) this.session.append('model/retry', { turn, step, ...notice })
    })
    try {
      for await (const chunk of (this.turnModel ?? this.model).stream(request, signal)) {
        assembler.push(chunk)
        if (chunk.type === 'text-delta') this.ctx.emit('agent/delta', this, { kind: 'text', text: chunk.text })
        else if (chunk.type === 'reasoning-delta')
          this.ctx.emit('agent/delta', this, { kind: 'reasoning', text: chunk.text })
        else if (chunk.type === 'tool-call-start')
          this.ctx.emit('agent/delta', this, { kind: 'tool-input', index: chunk.index, name: chunk.name, text: '' })
        else if (chunk.type === 'tool-call-delta')
          this.ctx.emit('agent/delta', this, { kind: 'tool-input', index: chunk.index, text: chunk.argumentsDelta })
      }
    } catch (error) {
      if (signal.aborted || (error instanceof LlmError && error.kind === 'aborted')) {
        // Keep what the user already saw; unfinished tool calls are dropped, never run.
        const partial = assembler.message()
        partial.content = partial.content.filter((block) => block.type !== 'tool-call')
        if (partial.content.length)
          this.session.append('assistant/message', { turn, step, message: partial }, { surfaceOp: { op: 'append' } })
        return 'aborted'
      }
      throw error
    } finally {
      offRetry()
    }
    const message = assembler.message()
    const calls = toolCallsOf(message)
    // Rewritten in the message itself, before it is logged: the model then sees its calls and their results under the
    // same ids, and no two results ever share one (strict providers reject that, and the log would be ambiguous).
    for (const [i, call] of calls.entries()) call.id = this.uniqueCallId(call.id || `call_${turn}_${step}_${i}`)
    const usage = assembler.usage
    const price = (this.turnModel ?? this.model).price
    this.session.append(
      'assistant/message',
      {
        turn,
        step,
        message,
        ...(usage ? { usage } : {}),
        ...(usage && price ? { costUsd: requestCost(usage, price) } : {}),
      },
      { surfaceOp: { op: 'append' } },
    )
    const text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    if (text) result.text = text
    if (!calls.length) return assembler.finish === 'max-tokens' ? 'max-tokens' : 'completed'
    result.toolCalls += calls.length
    await this.runCalls(turn, step, calls, signal)
    return signal.aborted ? 'aborted' : undefined
  }

  /**
   * Consecutive concurrency-safe calls overlap; any other call runs alone. `tool/call` events are logged in model
   * order before their tools start, and `tool/result` events in model order after.
   */
  private async runCalls(turn: number, step: number, calls: ToolCallBlock[], signal: AbortSignal): Promise<void> {
    const exclude = this.options.excludeTools ?? []
    let i = 0
    while (i < calls.length) {
      let j = i + 1
      if (this.ctx.tools.isConcurrencySafe(calls[i]!.name)) {
        while (j < calls.length && this.ctx.tools.isConcurrencySafe(calls[j]!.name)) j++
      }
      const batch = calls.slice(i, j)
      i = j
      await this.ctx.parallel(
        'agent/before-tools',
        this,
        batch.map((call) => call.name),
        signal,
      )
      for (const call of batch)
        this.session.append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments })
      if (signal.aborted) {
        for (const call of batch)
          this.appendResult(turn, step, call, {
            isError: true,
            content: [{ type: 'text', text: ABORTED_BEFORE_START }],
            details: { kind: 'cancelled' },
          })
        continue
      }
      const verdicts = await this.authorize(batch, signal)
      const results = await Promise.all(
        batch.map((call, k) => {
          const verdict = verdicts[k]!
          if (this.ctx.tools.excluded(call.name, exclude))
            return Promise.resolve<ToolResult>({
              isError: true,
              content: [{ type: 'text', text: `Error: tool ${call.name} is not available to this agent` }],
            })
          if (!verdict.allowed)
            return Promise.resolve<ToolResult>({ isError: true, content: [{ type: 'text', text: verdict.message }] })
          return this.ctx.tools.execute({
            callId: call.id,
            name: call.name,
            arguments: call.arguments,
            agent: this,
            signal,
            ...(verdict.sandbox ? { sandbox: verdict.sandbox } : {}),
            ...this.hostAsker(verdict.sandbox, call, signal),
            onUpdate: (text) => this.ctx.emit('agent/delta', this, { kind: 'tool-output', callId: call.id, text }),
          })
        }),
      )
      const hooks = this.hooks
      if (hooks)
        for (const [k, call] of batch.entries()) {
          const result = results[k]!
          if (!verdicts[k]!.allowed || signal.aborted) continue
          const note = await hooks.postTool(
            this,
            { callId: call.id, name: call.name, arguments: call.arguments },
            result,
            signal,
          )
          if (note !== undefined) results[k] = { ...result, content: [...result.content, { type: 'text', text: note }] }
        }
      // Every call of the batch has finished: their results reach the disk with one fsync, not one each.
      this.session.together(() => {
        for (const [k, call] of batch.entries()) {
          const result = results[k]!
          // A call that failed once the turn was cancelled was cut short by the cancel: front ends say so.
          const cancelled = signal.aborted && result.isError && !result.details
          this.appendResult(turn, step, call, cancelled ? { ...result, details: { kind: 'cancelled' } } : result)
        }
      })
    }
  }

  /** `id` itself when this session has not used it yet, else `id_2`, `id_3`, … (still a valid id for every provider). */
  private uniqueCallId(id: string): string {
    let unique = id
    for (let n = 2; this.callIds.has(unique); n++) unique = `${id}_${n}`
    this.callIds.add(unique)
    return unique
  }

  /**
   * Asks the permission policy (when `@keel/permissions` is loaded) about each call of a batch, one at a time in
   * model order, so a person is never shown two questions at once by one agent.
   */
  private async authorize(batch: ToolCallBlock[], signal: AbortSignal): Promise<Verdict[]> {
    // `ctx.permissions` when @keel/permissions is loaded; it implements the seam @keel/tools declares.
    const permissions: PermissionGate | undefined = this.ctx.get('permissions')
    const exclude = this.options.excludeTools ?? []
    const hooks = this.hooks
    const out: Verdict[] = []
    for (const call of batch) {
      if (this.ctx.tools.excluded(call.name, exclude)) {
        out.push({ allowed: true })
        continue
      }
      const hook: PreToolVerdict | undefined = await hooks?.preTool(
        this,
        { callId: call.id, name: call.name, arguments: call.arguments },
        signal,
      )
      if (!permissions) {
        out.push(
          hook?.decision === 'deny'
            ? { allowed: false, message: `Error: a PreToolUse hook denied ${call.name}: ${hook.reason}` }
            : { allowed: true },
        )
        continue
      }
      out.push(
        await permissions.authorize({
          session: this.session,
          cwd: this.cwd,
          callId: call.id,
          tool: call.name,
          arguments: call.arguments,
          signal,
          ...(hook ? { hook } : {}),
        }),
      )
    }
    return out
  }

  /** How a sandboxed call asks the permission policy about a host its allow list does not name. */
  private hostAsker(
    sandbox: SandboxLevel | undefined,
    call: ToolCallBlock,
    signal: AbortSignal,
  ): Pick<ToolExecution, 'network'> {
    const permissions: PermissionGate | undefined = this.ctx.get('permissions')
    if (!sandbox || sandbox === 'off' || !permissions?.authorizeHost) return {}
    const gate = permissions.authorizeHost.bind(permissions)
    return {
      network: (host, port, ended) =>
        gate({
          session: this.session,
          cwd: this.cwd,
          callId: call.id,
          tool: call.name,
          host,
          port,
          signal: AbortSignal.any([signal, ended]),
        }),
    }
  }

  private appendResult(turn: number, step: number, call: ToolCallBlock, result: ToolResult): void {
    this.session.append(
      'tool/result',
      {
        turn,
        step,
        callId: call.id,
        content: result.content,
        isError: result.isError,
        ...(result.details ? { details: result.details } : {}),
      },
      { surfaceOp: { op: 'append' } },
    )
  }
}

function textOfBlocks(content: ContentBlock[]): string {
  return content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}
