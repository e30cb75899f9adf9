// `keel plan`: the person's side of the plan from a shell, for the current session (the latest of the working
// directory, or -r's). Edits and answers go through ctx.plans like a door's; a session a door holds gets them over
// that process's socket (@keel/todo's remote.ts), any other is opened here (an answer then runs its turn here).
import type { Context } from 'cordis'
import { escapeLine, SessionLockedError } from '@keel/session'
import {
  latestProposal,
  parsePlanWords,
  type PlanRequest,
  planHeader,
  planLines,
  planSocketPath,
  sendPlanRequest,
  standingPlan,
} from '@keel/todo'
import { proposalWords } from '@keel/door/words'
import { UsageError, workingDirectory, type Flags } from './args.ts'
import { latestSessionId, openAgent } from './agent.ts'
import { resolveSessionId } from './session-id.ts'

/** `keel plan`'s words as @keel/todo reads them; `approve` takes its mode from --mode too. */
function planRequest(words: readonly string[], flags: Flags): PlanRequest | 'show' {
  const [verb, ...rest] = words
  const typed = verb === 'approve' && !rest.length && flags.mode !== undefined ? [verb, flags.mode] : words
  const parsed = parsePlanWords(typed)
  if (typeof parsed === 'object' && 'error' in parsed)
    throw new UsageError(`keel ${parsed.error}  (-r <id>: another session)`)
  return parsed
}

/** Runs `keel plan …`; returns the exit code (1 when the edit or answer was refused, with the rule on stderr). */
export async function runPlan(
  ctx: Context,
  flags: Flags,
  words: readonly string[],
  modelFlag: string | undefined,
): Promise<number> {
  const request = planRequest(words, flags)
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
      await ctx.agents.closeAtExit(agent)
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
