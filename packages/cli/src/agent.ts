import type { Context } from 'cordis'
import { type Agent, type LlmAdapter, openForResume } from '@keel/agent'
import { modelSpec, UsageError, workingDirectory, type Flags } from './args.ts'
import type { FirstRequest } from './first-request.ts'
import { mcpOf } from './mcp.ts'

/** The latest top-level session of a directory that has a prompt, for --continue (an empty one is nothing to continue). */
export function latestSessionId(ctx: Context, cwd: string): string | undefined {
  return ctx.sessions.list(cwd).find((summary) => !summary.parent && summary.title)?.id
}

/**
 * A new agent, or the one --continue / --resume names, with the model the flags ask for. `modelFlag` is the
 * `--model` typed on the command line (main() folds the settings' model into `flags.model` too): a reopened session
 * keeps the model its log records (the one it started with, with its --base-url, or its last /model choice) over the
 * settings, the environment and the default, but not over `--model`, which it then records.
 */
export async function openAgent(
  ctx: Context,
  flags: Flags,
  {
    modelFlag,
    first,
    maxSteps,
  }: {
    modelFlag: string | undefined
    first?: FirstRequest
    /** Model requests a turn may make (print mode's --max-turns); the agent plugin's `maxSteps` otherwise. */
    maxSteps?: number
  } = { modelFlag: flags.model },
): Promise<{ agent: Agent; repairs: string[]; resumed: boolean }> {
  const cwd = workingDirectory(flags)
  const limit = maxSteps !== undefined ? { maxSteps } : {}
  // MCP servers start now, alongside whatever comes before the first request; that request waits for them.
  void mcpOf(ctx)?.ready(cwd)
  // Print mode's first request already sent (first-request.ts; only ever for a new session): the agent takes it over.
  const recordModel = { spec: modelSpec(flags), ...(flags['base-url'] ? { baseUrl: flags['base-url'] } : {}) }
  if (first) {
    const { sessionId, model, instructions } = first
    return {
      agent: ctx.agents.create({ cwd, model, sessionId, instructions, recordModel, ...limit }),
      repairs: [],
      resumed: false,
    }
  }
  let id = flags.resume
  if (flags.continue) {
    id = latestSessionId(ctx, cwd)
    if (!id) throw new UsageError(`no session to continue in ${cwd}`)
  }
  if (id && flags.fork) id = ctx.sessions.branch(id)
  if (!id) {
    const model = await createModel(ctx, flags, modelSpec(flags))
    return { agent: ctx.agents.create({ cwd, model, recordModel, ...limit }), repairs: [], resumed: false }
  }
  // Opened before its model is known, and taken over by the resume below (`openForResume`: the log is read once).
  const { opened, recorded, release } = openForResume(ctx.sessions, id)
  // A reopened session keeps the model its log records, unless --model names one.
  const chosen = modelFlag === undefined ? recorded : undefined
  let resumed: ReturnType<typeof ctx.agents.resume>
  try {
    const model = chosen
      ? await createModel(ctx, flags, chosen.spec, chosen.baseUrl)
      : await createModel(ctx, flags, modelSpec(flags))
    resumed = ctx.agents.resume(id, { model, cwd, recordModel, ...limit })
  } catch (error) {
    release()
    throw error
  }
  const { agent, repairs } = resumed
  // --model on a reopened session: the log says so, so the next -c continues on it.
  if (!chosen && recorded && recorded.spec !== recordModel.spec) agent.session.append('session/model', recordModel)
  return { agent, repairs: [...opened.repairs, ...repairs], resumed: true }
}

/**
 * The adapter for `spec`; --base-url applies to the provider the flags chose, not to one switched to later. A
 * session's recorded base URL (`recordedBaseUrl`) is the server it started on, used unless --base-url names another.
 */
export function createModel(ctx: Context, flags: Flags, spec: string, recordedBaseUrl?: string): Promise<LlmAdapter> {
  const provider = (spec: string) => spec.slice(0, spec.indexOf('/'))
  const flagged = provider(spec) === provider(modelSpec(flags)) ? flags['base-url'] : undefined
  return ctx.llm.create(spec, { baseUrl: flagged ?? recordedBaseUrl, cwd: workingDirectory(flags) })
}
