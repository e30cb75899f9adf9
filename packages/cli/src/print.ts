import type { Context } from 'cordis'
import type { AgentDelta, TurnResult } from '@keel/agent'
import {
  escapeControls,
  escapeLine,
  onNotice,
  textOf,
  type ContentBlock,
  type ImageBlock,
  type SessionEvent,
} from '@keel/session'
import { hostRefusal, summarize } from '@keel/permissions'
import { openTasks, openTasksNotice, planHeader, planLines, standingPlan, type TodoItem } from '@keel/todo'
import { addTotal, type CostTotal, costUsd, emptyCost, sessionCost } from '@keel/session/cost'
import { retryText } from '@keel/llm/retry-text'
import type { Flags } from './args.ts'
import { openAgent } from './agent.ts'
import { rememberTools, type FirstRequest } from './first-request.ts'
import { expandSlash } from '@keel/door/slash'
import { assistantText, finalAnswer, isInterim, transcriptOf } from './print-answer.ts'
import { RunCost } from './print-budget.ts'
import { Denials } from './print-denials.ts'
import type { PrintLimits } from './print-limits.ts'
import { DENIAL_EXIT_CODE, endLine, EXIT_CODES, type PrintReason } from './print-outcome.ts'
import type { OutputSchema } from './print-schema.ts'

/**
 * What the turns' requests reported and cost: their own steps, their compaction summaries and their subagents, rolled
 * up (`usage`, `costUsd`, null when no price was known) and listed (`costs`), by @keel/session/cost's arithmetic.
 */
function turnCost(events: readonly SessionEvent[], turns: readonly number[]) {
  const all = turns.map((turn) => sessionCost(events, { turn }))
  const total = emptyCost()
  for (const cost of all) addTotal(total, cost.total)
  const parts = all.flatMap((cost) => cost.parts)
  const tokens = (t: CostTotal) => ({
    input: t.input,
    output: t.output,
    cacheRead: t.cacheRead,
    cacheWrite: t.cacheWrite,
  })
  return {
    usage: tokens(total),
    costUsd: costUsd(total),
    costs: parts
      .filter((part) => part.total.requests)
      .map((part) => ({
        source: part.source,
        ...(part.sessionId ? { sessionId: part.sessionId } : {}),
        requests: part.total.requests,
        ...tokens(part.total),
        costUsd: costUsd(part.total),
      })),
  }
}

/** A stream that stops being written to once it fails (a closed pipe, a hung-up terminal) instead of throwing. */
interface Output {
  write(text: string): void
  readonly broken: boolean
}

function guardedOutput(stream: NodeJS.WritableStream, onBroken: (error: NodeJS.ErrnoException) => void): Output {
  let broken = false
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (broken) return
    broken = true
    onBroken(error)
  })
  return {
    write(text) {
      if (!broken) stream.write(text)
    },
    get broken() {
      return broken
    },
  }
}

/** Exit codes for the ways print mode is stopped from outside: 128 + the signal's number, as a shell reports it. */
const STOP_EXIT_CODES = { SIGINT: 130, SIGHUP: 129, SIGTERM: 143, EPIPE: 141 } as const
/** What cancels a run: a stop from outside, or one of its own limits (the turn is cancelled the same way). */
type StopCause = keyof typeof STOP_EXIT_CODES | 'timeout' | 'budget'
/** How long a stopped run waits for its turn to close on the log before it exits anyway. */
const STOP_GRACE_MS = 5000

function exitCodeOf(cause: StopCause): number {
  return cause === 'timeout' || cause === 'budget' ? EXIT_CODES[cause] : STOP_EXIT_CODES[cause]
}

export interface PrintOptions {
  modelFlag: string | undefined
  first?: FirstRequest
  toolsKey?: string
  /** --max-turns, --timeout, --max-budget-usd, --fail-on-denial (print-limits.ts), read before boot. */
  limits?: PrintLimits
  /** --output-schema, loaded and compiled before boot. */
  outputSchema?: OutputSchema
  /** `--image` files, after the prompt's text. */
  images?: ImageBlock[]
}

/**
 * Print mode: one prompt, one turn (and one corrective turn when the answer fails --output-schema). stdout carries
 * only the final answer (or JSON); interim text, plans and tool activity go to stderr (nowhere with --quiet).
 */
export async function runPrint(
  ctx: Context,
  flags: Flags,
  prompt: string,
  options: PrintOptions = { modelFlag: flags.model },
): Promise<number> {
  const format = flags['output-format'] ?? 'text'
  const activity = format === 'text' && !flags.quiet
  const limits: PrintLimits = options.limits ?? { failOnDenial: false }
  const { outputSchema } = options
  const started = Date.now()
  const { agent, repairs, resumed } = await openAgent(ctx, flags, { ...options, maxSteps: limits.maxTurns })
  // Model requests of this run: the agent's own (what --max-turns limits), and its subagents' apart.
  const requests = { agent: 0, subagents: 0 }
  // The tools of this run's first request, for the next run's early one (first-request.ts); after it has left.
  let { toolsKey } = options
  const disposeRequest = ctx.on('agent/request', (source, request) => {
    if (source !== agent) {
      if (source.depth > 0) requests.subagents++
      return
    }
    requests.agent++
    if (!toolsKey) return
    const key = toolsKey
    toolsKey = undefined
    setImmediate(() => rememberTools(key, request.tools))
  })
  // The model in use: a reopened session may run on its own /model choice.
  const model = `${agent.model.provider}/${agent.model.model}`
  const instructions = agent.instructions.files.map((file) => file.path)

  // Stopped from outside (a signal, or a reader that went away) or by a limit of its own (--timeout,
  // --max-budget-usd): cancel the turn, so its commands are killed and the log closes it as aborted, then exit with
  // the matching code. A second stop, or a turn that does not end within the grace period, exits at once (the shell
  // plugin's exit hook still kills running commands).
  let stopped: StopCause | undefined
  const stop = (why: StopCause, note?: string) => {
    if (stopped) {
      if (why !== 'EPIPE') process.exit(exitCodeOf(stopped))
      return
    }
    stopped = why
    if (note) err.write(note)
    agent.cancel()
    setTimeout(() => process.exit(exitCodeOf(why)), STOP_GRACE_MS).unref()
  }
  const out = guardedOutput(process.stdout, () => stop('EPIPE'))
  const err = guardedOutput(process.stderr, () => {})
  for (const repair of repairs) err.write(`keel: session ${agent.id}: ${repair}\n`)
  // A reopened session runs on the model its log records: say which, so a switch is never silent.
  if (resumed) err.write(`keel: continuing session ${agent.id} on ${escapeLine(model)}\n`)
  // Plugins' one-line notices for the person (`keel/notice`), on stderr in every output format.
  const warn = (line: string) => {
    err.write(`keel: ${escapeLine(line)}\n`)
  }
  const disposeWarnings = [onNotice(ctx, (notice) => warn(notice.text))]
  if (format === 'stream-json') {
    out.write(
      JSON.stringify({
        type: 'system/init',
        sessionId: agent.id,
        model,
        cwd: agent.cwd,
        tools: ctx.tools.names(),
        instructions,
      }) + '\n',
    )
  }

  // The budget is checked against what the run's requests (subagents' too) have cost once each one is logged.
  const spent = new RunCost()
  const budget = limits.maxBudgetUsd
  if (budget !== undefined && !agent.model.price)
    warn(`--max-budget-usd: no price is known for ${model}, so the budget of $${budget} cannot be checked`)
  // A denial is summed up as the person would have been asked about it (the summary of an ask).
  const denials = new Denials(agent.id, (tool, args) => {
    const access = ctx.tools.access(tool, args, agent.cwd)
    return access ? summarize(tool, access, agent.cwd) : ctx.tools.present(tool, args).title
  })
  const disposeEvents = ctx.on('session/event', (session, event) => {
    if (!denials.observe(session, event)) return
    spent.observe(event)
    if (!stopped && budget !== undefined && (spent.total ?? 0) >= budget) stop('budget')
    if (session !== agent.session) return
    // A wait before a retry, in every format: an unattended run's log says why it paused.
    if (event.type === 'model/retry') err.write(`keel: ${escapeLine(retryText(event.data))}\n`)
    // text format shows every failed result anyway; the others still owe stderr the reason for a denial.
    if (format !== 'text' && event.type === 'tool/result' && denials.has(session, event.data.callId)) {
      err.write(`keel: ${escapeLine(textOf(event.data.content)).slice(0, 500)}\n`)
    }
    // A host refused to a running command: its output may not say which (an npm 403), so stderr does, in every format.
    if (event.type === 'permission/decision' && event.data.host && event.data.decision === 'deny')
      err.write(`keel: ${escapeLine(hostRefusal(event.data.host))}\n`)
    if (format === 'stream-json') out.write(JSON.stringify({ ...event, sessionId: agent.id }) + '\n')
    else if (activity) showOnStderr(event, err, ctx, (callId) => denials.has(session, callId))
  })
  const disposeDeltas = ctx.on('agent/delta', (source, delta: AgentDelta) => {
    if (source !== agent || format !== 'stream-json') return
    out.write(JSON.stringify({ type: 'live/delta', sessionId: agent.id, delta }) + '\n')
  })

  const onSigint = () => stop('SIGINT', '\nkeel: cancelling (Ctrl+C again to quit now)\n')
  const onSigterm = () => stop('SIGTERM', 'keel: got SIGTERM, cancelling the turn\n')
  const onSighup = () => stop('SIGHUP')
  process.on('SIGINT', onSigint)
  process.on('SIGTERM', onSigterm)
  process.on('SIGHUP', onSighup)
  // The time limit counts from the process's start (performance.now()), so boot and the first request count too.
  const timer =
    limits.timeoutMs === undefined
      ? undefined
      : setTimeout(() => stop('timeout'), Math.max(0, limits.timeoutMs - performance.now()))
  timer?.unref()
  try {
    const slash = await expandSlash(ctx, agent, prompt, !!flags.trust, (line) => err.write(`${escapeLine(line)}\n`))
    const content: ContentBlock[] = [{ type: 'text', text: slash.text }, ...(options.images ?? [])]
    const results: TurnResult[] = [
      await agent.prompt(content, {
        ...(slash.command ? { command: slash.command } : {}),
        ...(slash.model ? { model: slash.model } : {}),
      }),
    ]
    let check: { value?: unknown; errors: string[] } | undefined
    if (outputSchema && !stopped && answered(results.at(-1)!)) {
      check = outputSchema.check(finalAnswer(agent.session.events, results.at(-1)!.turn))
      if (check.errors.length) {
        err.write(`keel: the answer does not match --output-schema ${outputSchema.file}; asking once more\n`)
        results.push(await agent.prompt(outputSchema.correction(check.errors)))
        check = answered(results.at(-1)!)
          ? outputSchema.check(finalAnswer(agent.session.events, results.at(-1)!.turn))
          : undefined
      }
    }
    const result = results.at(-1)!
    const turns = results.map((turn) => turn.turn)
    const events = agent.session.events
    const text = answered(result) ? finalAnswer(events, result.turn) : ''
    const reason = reasonOf(result, stopped, limits, check)
    const outputErrors = reason === 'invalid-output' ? check!.errors : undefined
    if (format === 'text') {
      if (text) out.write(escapeControls(text) + (text.endsWith('\n') ? '' : '\n'))
      else if (activity) {
        // A turn cut short in the middle of a step: what the model had said goes with the activity, not the answer.
        const last = events.findLast((event) => event.type === 'assistant/message' && event.data.turn === result.turn)
        if (last?.type === 'assistant/message' && !isInterim(last) && assistantText(last))
          err.write(`${escapeControls(assistantText(last))}\n`)
      }
    }
    if (format === 'json' || format === 'stream-json') {
      // One shape for both: the json output, and the closing `result` line of stream-json (see the README contract).
      const summary = {
        sessionId: agent.id,
        reason,
        ...(result.message ? { error: result.message } : {}),
        text,
        transcript: transcriptOf(events, turns),
        ...(check && !check.errors.length ? { structured: check.value } : {}),
        ...(outputErrors ? { outputErrors } : {}),
        permissionDenials: denials.list,
        turn: result.turn,
        steps: results.reduce((sum, turn) => sum + turn.steps, 0),
        toolCalls: results.reduce((sum, turn) => sum + turn.toolCalls, 0),
        requests,
        todos: standingPlan(events) ?? [],
        ...turnCost(events, turns),
        durationMs: Date.now() - started,
        model,
        instructions,
      }
      out.write(
        format === 'json'
          ? JSON.stringify(summary, null, 2) + '\n'
          : JSON.stringify({ type: 'result', ...summary }) + '\n',
      )
    }
    const line = endLine(reason, {
      message: reason === 'invalid-output' ? outputErrors!.join('; ') : result.message,
      limit:
        reason === 'max-turns'
          ? String(limits.maxTurns)
          : reason === 'timeout'
            ? (flags.timeout ?? `${limits.timeoutMs! / 1000}s`)
            : reason === 'budget'
              ? String(budget)
              : outputSchema?.file,
    })
    if (line) err.write(`keel: ${escapeLine(line)}\n`)
    else if (reason === 'aborted')
      err.write(
        stopped === 'EPIPE' ? 'keel: stdout was closed; the turn was cancelled\n' : 'keel: the turn was cancelled\n',
      )
    if (requests.subagents && format === 'text')
      err.write(`keel: ${requests.agent} model requests, and ${requests.subagents} by subagents\n`)
    if (denials.list.length) err.write(`keel: ${denialLine(denials.list.length, limits.failOnDenial)}\n`)
    const open = openTasks(standingPlan(events))
    if (format === 'text' && open.length) err.write(`keel: ${openTasksNotice(open).text}\n`)
    if (format === 'text') err.write(`keel: session ${agent.id}\n`)
    if (stopped && stopped !== 'timeout' && stopped !== 'budget') return STOP_EXIT_CODES[stopped]
    if (out.broken) return STOP_EXIT_CODES.EPIPE
    if (EXIT_CODES[reason]) return EXIT_CODES[reason]
    return denials.list.length && limits.failOnDenial ? DENIAL_EXIT_CODE : 0
  } finally {
    clearTimeout(timer)
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
    process.off('SIGHUP', onSighup)
    disposeEvents()
    disposeDeltas()
    disposeRequest()
    for (const dispose of disposeWarnings) dispose()
    await ctx.agents.closeAtExit(agent)
  }
}

/** A turn that ended with an answer: it completed, or the model ran out of output tokens while answering. */
function answered(result: TurnResult): boolean {
  return result.reason === 'completed' || result.reason === 'max-tokens'
}

/** Why the run ended, in the words of the contract (print-outcome.ts). */
function reasonOf(
  result: TurnResult,
  stopped: StopCause | undefined,
  limits: PrintLimits,
  check: { errors: string[] } | undefined,
): PrintReason {
  if (result.reason === 'aborted' && (stopped === 'timeout' || stopped === 'budget')) return stopped
  if (result.reason === 'step-limit' && limits.maxTurns !== undefined && result.steps >= limits.maxTurns)
    return 'max-turns'
  if (answered(result) && check?.errors.length) return 'invalid-output'
  return result.reason
}

function denialLine(count: number, failing: boolean): string {
  const calls = count === 1 ? '1 tool call was' : `${count} tool calls were`
  return failing
    ? `${calls} denied; exit ${DENIAL_EXIT_CODE} (--fail-on-denial)`
    : `${calls} denied (listed as permissionDenials in --output-format json; --fail-on-denial makes this exit ${DENIAL_EXIT_CODE})`
}

/** What a person watching print mode sees on stderr: interim text, tool calls, failed results, every plan update. */
function showOnStderr(event: SessionEvent, err: Output, ctx: Context, denied: (callId: string) => boolean): void {
  if (event.type === 'assistant/message') {
    // The answer goes to stdout at the end; text said on the way to a tool call is activity.
    const text = assistantText(event)
    if (text && isInterim(event)) err.write(`${escapeControls(text.replace(/\n+$/, ''))}\n`)
  } else if (event.type === 'tool/call') {
    if (event.data.name === 'todo_write') return
    const view = ctx.tools.present(event.data.name, event.data.arguments)
    err.write(`→ ${escapeLine(view.title).slice(0, 200)}\n`)
  } else if (event.type === 'tool/result' && event.data.isError) {
    const text = event.data.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    // A denial's reason says how to get past it (--allow, --mode): never cut it short.
    err.write(`  ${escapeLine(text).slice(0, denied(event.data.callId) ? 1000 : 300)}\n`)
  } else if (event.type === 'todo/write') {
    const todos = event.data.todos as TodoItem[]
    err.write(
      `${planHeader(todos)}\n${planLines(todos)
        .map((line) => `  ${line}`)
        .join('\n')}\n`,
    )
  }
}
