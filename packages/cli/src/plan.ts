// `keel plan`: the person's side of the plan from a shell, for the current session (the latest of the working
// directory, or -r's). Edits and answers go through ctx.plans like a door's; a session a door holds gets them over
// that process's socket (@keel/todo's remote.ts), any other is opened here (an answer then runs its turn here).
import type { Context } from 'cordis'
import { escapeLine, SessionLockedError } from '@keel/session'
import {
  latestProposal,
  type PlanEdit,
  type PlanRequest,
  planHeader,
  planLines,
  planSocketPath,
  sendPlanRequest,
  standingPlan,
  type TodoStatus,
} from '@keel/todo'
import { proposalWords } from '@keel/door/words'
import { UsageError, workingDirectory, type Flags } from './args.ts'
import { latestSessionId, openAgent } from './agent.ts'
import { resolveSessionId } from './session-id.ts'

const PLAN_USAGE =
  'usage: keel plan [show] | add <text> | rename <n> <text> | move <n> <m> | remove <n> | done|start|pending <n> | approve [--mode ask|auto] | reject <sentence>  (-r <id>: another session)'

const STATUS: Record<string, TodoStatus> = { done: 'completed', start: 'in_progress', pending: 'pending' }

/** The request the words ask for, or 'show'; a usage error names what is wrong. Items are numbered from 1. */
function parsePlanWords(words: readonly string[], flags: Flags): PlanRequest | 'show' {
  const [verb = 'show', ...rest] = words
  const text = rest.join(' ')
  const item = (word: string | undefined): number => {
    const n = Number(word)
    if (!Number.isInteger(n) || n < 1)
      throw new UsageError(`an item number (1, 2, …) goes here, not ${JSON.stringify(word ?? '')}; ${PLAN_USAGE}`)
    return n - 1
  }
  const edit = (value: PlanEdit): PlanRequest => ({ op: 'edit', edit: value })
  switch (verb) {
    case 'show':
      if (rest.length) break
      return 'show'
    case 'add':
      if (!text.trim()) break
      return edit({ op: 'add', content: text })
    case 'rename':
      if (rest.length < 2) break
      return edit({ op: 'rename', index: item(rest[0]), content: rest.slice(1).join(' ') })
    case 'move':
      if (rest.length !== 2) break
      return edit({ op: 'move', index: item(rest[0]), to: item(rest[1]) })
    case 'remove':
      if (rest.length !== 1) break
      return edit({ op: 'delete', index: item(rest[0]) })
    case 'done':
    case 'start':
    case 'pending':
      if (rest.length !== 1) break
      return edit({ op: 'status', index: item(rest[0]), status: STATUS[verb]! })
    case 'approve': {
      if (rest.length) break
      const mode = flags.mode ?? 'ask'
      if (mode !== 'ask' && mode !== 'auto')
        throw new UsageError(`keel plan approve runs in --mode ask or auto, not ${mode}`)
      return { op: 'answer', answer: { kind: 'approve', mode } }
    }
    case 'reject':
      if (!text.trim()) throw new UsageError('keel plan reject needs a sentence for the model: why, and what instead')
      return { op: 'answer', answer: { kind: 'reject', message: text } }
  }
  throw new UsageError(PLAN_USAGE)
}

/** Runs `keel plan …`; returns the exit code (1 when the edit or answer was refused, with the rule on stderr). */
export async function runPlan(
  ctx: Context,
  flags: Flags,
  words: readonly string[],
  modelFlag: string | undefined,
): Promise<number> {
  const request = parsePlanWords(words, flags)
  const cwd = workingDirectory(flags)
  const id = flags.resume ? resolveSessionId(ctx, flags.resume) : latestSessionId(ctx, cwd)
  if (!id) throw new UsageError(`no session in ${cwd} to plan in; start one with keel, or name one with -r`)
  if (request !== 'show') {
    const refused = await apply(ctx, flags, id, request, modelFlag)
    if (refused) {
      process.stderr.write(`keel: ${escapeLine(refused)}\n`)
      return 1
    }
  }
  process.stdout.write(`${show(ctx, id)}\n`)
  return 0
}

async function apply(
  ctx: Context,
  flags: Flags,
  id: string,
  request: PlanRequest,
  modelFlag: string | undefined,
): Promise<string | undefined> {
  try {
    if (request.op === 'edit') {
      const { session } = ctx.sessions.open(id)
      try {
        return ctx.plans.edit(session, request.edit)?.error
      } finally {
        ctx.sessions.close(session)
      }
    }
    // An answer opens a turn: it runs here, with the model the session records (or --model), to its end.
    const { agent } = await openAgent(ctx, { ...flags, resume: id, mode: undefined }, { modelFlag })
    try {
      const answered = await ctx.plans.answer(agent, request.answer)
      if ('error' in answered) return answered.error
      const result = await answered.turn
      if (result?.text) process.stdout.write(`${escapeLine(result.text)}\n`)
      return undefined
    } finally {
      ctx.agents.close(agent)
    }
  } catch (error) {
    if (!(error instanceof SessionLockedError)) throw error
    // A door holds the session: it applies the request, as its own edits.
    const path = planSocketPath(id)
    if (!path) return `${error.message}; make the change there`
    const reply = await sendPlanRequest(path, request).catch(() => undefined)
    if (!reply) return `${error.message}, which does not take plan edits; make the change there`
    return 'error' in reply ? reply.error : undefined
  }
}

/** The standing plan and the latest proposal, as `sessions show` words them. */
function show(ctx: Context, id: string): string {
  const { events } = ctx.sessions.read(id)
  const todos = standingPlan(events)
  const lines = todos?.length
    ? [planHeader(todos), ...planLines(todos).map((line, i) => `  ${i + 1}. ${line}`)]
    : ['No plan stands.']
  const proposal = latestProposal(events)
  if (proposal?.status === 'pending')
    lines.push(
      '',
      `◇ ${escapeLine(proposalWords(proposal).text)}`,
      ...proposal.plan.split('\n').map((l) => `  ${escapeLine(l)}`),
    )
  return lines.join('\n')
}
