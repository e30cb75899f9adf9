import { resolve } from 'node:path'
import type { Context } from 'cordis'
import type { Agent } from '@keel/agent'
import { DEFAULT_MODEL, UsageError, type Flags } from './args.ts'
import { mcpOf } from './mcp.ts'

export function workingDirectory(flags: Flags): string {
  return resolve(flags.cwd ?? process.cwd())
}

export function modelSpec(flags: Flags): string {
  return flags.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL
}

/** The latest top-level session of a directory that has a prompt, for --continue (an empty one is nothing to continue). */
export function latestSessionId(ctx: Context, cwd: string): string | undefined {
  return ctx.sessions.list(cwd).find((summary) => !summary.parent && summary.title)?.id
}

/** A new agent, or the one --continue / --resume names, with the model the flags ask for. */
export async function openAgent(
  ctx: Context,
  flags: Flags,
): Promise<{ agent: Agent; repairs: string[]; resumed: boolean }> {
  const cwd = workingDirectory(flags)
  // MCP servers start now, alongside whatever comes before the first request; that request waits for them.
  void mcpOf(ctx)?.ready(cwd)
  const model = await ctx.llm.create(modelSpec(flags), { baseUrl: flags['base-url'], cwd })
  let id = flags.resume
  if (flags.continue) {
    id = latestSessionId(ctx, cwd)
    if (!id) throw new UsageError(`no session to continue in ${cwd}`)
  }
  if (id && flags.fork) id = ctx.sessions.branch(id)
  if (id) {
    const { agent, repairs } = ctx.agents.resume(id, { model, cwd })
    return { agent, repairs, resumed: true }
  }
  return { agent: ctx.agents.create({ cwd, model }), repairs: [], resumed: false }
}
