import type { Context } from 'cordis'
import type { AgentDelta } from '@keel/agent'
import { escapeControls, escapeLine, onNotice, textOf, type SessionEvent } from '@keel/session'
import type {} from '@keel/permissions'
import { openTasks, openTasksNotice, planHeader, planLines, standingPlan, type TodoItem } from '@keel/todo'
import type { Flags } from './args.ts'
import { openAgent } from './agent.ts'
import { rememberTools, type FirstRequest } from './first-request.ts'

/** Tokens the turn's model requests reported, summed. */
function turnUsage(events: readonly SessionEvent[], turn: number): { input: number; output: number } {
  const usage = { input: 0, output: 0 }
  for (const event of events) {
    if (event.type !== 'assistant/message' || event.data.turn !== turn || !event.data.usage) continue
    usage.input += event.data.usage.input
    usage.output += event.data.usage.output
  }
  return usage
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
/** How long a stopped run waits for its turn to close on the log before it exits anyway. */
const STOP_GRACE_MS = 5000

/** Print mode: one prompt, one turn. stdout carries only the answer (or JSON); plans and tool activity go to stderr. */
export async function runPrint(
  ctx: Context,
  flags: Flags,
  prompt: string,
  options: { modelFlag: string | undefined; first?: FirstRequest; toolsKey?: string } = { modelFlag: flags.model },
): Promise<number> {
  const format = flags['output-format'] ?? 'text'
  const started = Date.now()
  const { agent, repairs } = await openAgent(ctx, flags, options)
  // The tools of this run's first request, for the next run's early one (first-request.ts); after it has left.
  const { toolsKey } = options
  const disposeRequest = ctx.on('agent/request', (source, request) => {
    if (source !== agent || !toolsKey) return
    disposeRequest()
    setImmediate(() => rememberTools(toolsKey, request.tools))
  })
  // The model in use: a reopened session may run on its own /model choice.
  const model = `${agent.model.provider}/${agent.model.model}`
  const instructions = agent.instructions.files.map((file) => file.path)
  let wroteText = false
  let endsWithNewline = true
  let textStep = -1
  let stepCounter = 0

  // Stopped from outside (a signal, or a reader that went away): cancel the turn, so its commands are killed and
  // the log closes it as aborted, then exit with the matching code. A second stop, or a turn that does not end
  // within the grace period, exits at once (the shell plugin's exit hook still kills running commands).
  let stopped: keyof typeof STOP_EXIT_CODES | undefined
  let cancelRequested = false
  const stop = (why: keyof typeof STOP_EXIT_CODES, note?: string) => {
    if (cancelRequested) {
      if (why !== 'EPIPE') process.exit(STOP_EXIT_CODES[stopped ?? why])
      return
    }
    stopped = why
    cancelRequested = true
    if (note) err.write(note)
    agent.cancel()
    setTimeout(() => process.exit(STOP_EXIT_CODES[why]), STOP_GRACE_MS).unref()
  }
  const out = guardedOutput(process.stdout, () => stop('EPIPE'))
  const err = guardedOutput(process.stderr, () => {})
  for (const repair of repairs) err.write(`keel: session ${agent.id}: ${repair}\n`)
  // Plugins' one-line notices for the person (`keel/notice`), on stderr in every output format.
  const disposeWarnings = [onNotice(ctx, (notice) => err.write(`keel: ${escapeLine(notice.text)}\n`))]
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

  const denied = new Set<string>()
  const disposeEvents = ctx.on('session/event', (session, event) => {
    if (session !== agent.session) return
    if (event.type === 'permission/decision' && event.data.decision === 'deny') denied.add(event.data.callId)
    // text format shows every failed result anyway; the others still owe stderr the reason for a denial.
    if (format !== 'text' && event.type === 'tool/result' && denied.has(event.data.callId)) {
      err.write(`keel: ${escapeLine(textOf(event.data.content)).slice(0, 500)}\n`)
    }
    if (format === 'stream-json') out.write(JSON.stringify({ ...event, sessionId: agent.id }) + '\n')
    else if (format === 'text') {
      // End the answer's current line before stderr speaks, so a shared terminal never glues the two together.
      if (wroteText && !endsWithNewline && (event.type === 'tool/call' || event.type === 'todo/write')) {
        out.write('\n')
        endsWithNewline = true
      }
      showOnStderr(event, err, ctx, denied)
    }
    if (event.type === 'step/start') stepCounter = event.data.step
  })
  const disposeDeltas = ctx.on('agent/delta', (source, delta: AgentDelta) => {
    if (source !== agent) return
    if (format === 'stream-json') out.write(JSON.stringify({ type: 'live/delta', sessionId: agent.id, delta }) + '\n')
    else if (format === 'text' && delta.kind === 'text') {
      // Separate the texts of different steps by a blank line, as a reader would expect.
      if (wroteText && textStep !== stepCounter) out.write(endsWithNewline ? '\n' : '\n\n')
      textStep = stepCounter
      const safe = escapeControls(delta.text)
      out.write(safe)
      wroteText = true
      endsWithNewline = safe.endsWith('\n')
    }
  })

  const onSigint = () => stop('SIGINT', '\nkeel: cancelling (Ctrl+C again to quit now)\n')
  const onSigterm = () => stop('SIGTERM', 'keel: got SIGTERM, cancelling the turn\n')
  const onSighup = () => stop('SIGHUP')
  process.on('SIGINT', onSigint)
  process.on('SIGTERM', onSigterm)
  process.on('SIGHUP', onSighup)
  try {
    const result = await agent.prompt(prompt)
    if (format === 'text' && wroteText && !endsWithNewline) out.write('\n')
    if (format === 'json' || format === 'stream-json') {
      // One shape for both: the json output, and the closing `result` line of stream-json (see the README contract).
      const summary = {
        sessionId: agent.id,
        reason: result.reason,
        ...(result.message ? { error: result.message } : {}),
        text: result.text,
        turn: result.turn,
        steps: result.steps,
        toolCalls: result.toolCalls,
        todos: standingPlan(agent.session.events) ?? [],
        usage: turnUsage(agent.session.events, result.turn),
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
    if (result.reason === 'error')
      err.write(`keel: the turn ended with an error: ${escapeLine(result.message ?? 'unknown error')}\n`)
    else if (result.reason === 'step-limit') err.write('keel: the turn hit the step limit and stopped\n')
    else if (result.reason === 'aborted')
      err.write(
        stopped === 'EPIPE' ? 'keel: stdout was closed; the turn was cancelled\n' : 'keel: the turn was cancelled\n',
      )
    const open = openTasks(standingPlan(agent.session.events))
    if (format === 'text' && open.length) err.write(`keel: ${openTasksNotice(open).text}\n`)
    if (format === 'text') err.write(`keel: session ${agent.id}\n`)
    if (stopped) return STOP_EXIT_CODES[stopped]
    if (out.broken) return STOP_EXIT_CODES.EPIPE
    return result.reason === 'error' ? 1 : result.reason === 'aborted' ? 130 : 0
  } finally {
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
    process.off('SIGHUP', onSighup)
    disposeEvents()
    disposeDeltas()
    disposeRequest()
    for (const dispose of disposeWarnings) dispose()
    ctx.agents.close(agent)
  }
}

/** What a person watching print mode sees on stderr: tool calls, failed results, and every plan update. */
function showOnStderr(event: SessionEvent, err: Output, ctx: Context, denied: ReadonlySet<string>): void {
  if (event.type === 'tool/call') {
    if (event.data.name === 'todo_write') return
    const view = ctx.tools.present(event.data.name, event.data.arguments)
    err.write(`→ ${escapeLine(view.title).slice(0, 200)}\n`)
  } else if (event.type === 'tool/result' && event.data.isError) {
    const text = event.data.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    // A denial's reason says how to get past it (--allow, --mode): never cut it short.
    err.write(`  ${escapeLine(text).slice(0, denied.has(event.data.callId) ? 1000 : 300)}\n`)
  } else if (event.type === 'todo/write') {
    const todos = event.data.todos as TodoItem[]
    err.write(
      `${planHeader(todos)}\n${planLines(todos)
        .map((line) => `  ${line}`)
        .join('\n')}\n`,
    )
  }
}
