import type { Context } from 'cordis'
import type { Agent } from '@keel/agent'
import { type PermissionMode, writesNothing } from '@keel/permissions'
import { bashTool, callEnv } from './bash.ts'
import type { Config } from './config.ts'
import { parserPreload } from './parser-preload.ts'
import { Jobs } from './jobs.ts'
import { jobKillTool, jobOutputTool } from './job-tools.ts'
import { type SpareRecipe, Spares, spareRecipe } from './spares.ts'
import { SessionTemps } from './temp.ts'

export { bashTool, statusText, type SandboxSource } from './bash.ts'
export { Config } from './config.ts'
export { CappedOutput } from './output.ts'
export { runCommand, type RunOptions, type RunOutcome } from './run.ts'
export { commandEnv, isCredential, PLAIN_OUTPUT, type EnvConfig } from './env.ts'
export { Jobs, type JobKillReason } from './jobs.ts'

export const name = 'keel-shell'
export const inject = { tools: { required: true }, sandbox: { required: false } }

export function apply(ctx: Context, config: Config): void {
  const temps = new SessionTemps()
  ctx.on('dispose', () => temps.clear())
  const jobs = new Jobs({
    maxJobs: config.maxJobs ?? 4,
    outputLimit: config.jobOutput ?? 64_000,
    killGraceMs: (config.jobKillGrace ?? 3) * 1000,
  })
  // Jobs die with their session, on a rewind of it, and with the plugin (Keel shutting down); the exit hook of
  // reap.ts covers a process that exits without disposing.
  ctx.on('dispose', () => jobs.endAll('shutdown'))
  // A sandbox started for a session's next command lives for its turn (see spares.ts): the turn ends once its spares
  // are gone, and their placeholders with them, so a door that reports the end finds the folder as the person left it.
  const spares = new Spares()
  ctx.on('dispose', () => spares.close())
  ctx.on('agent/before-turn-end', (agent) => spares.end(agent.session.id))
  ctx.on('session/closed', (session) => {
    void jobs.endSession(session, 'session-end')
    void spares.forget(session.id)
  })

  const preloadParser = parserPreload()
  // The model is reasoning, or has started writing a tool call: a turn that uses tools is the one that runs
  // commands, and its first `bash` often comes a step or two later (a plan first), so the sandbox is got ready from
  // the first call of any tool, with the rest of the answer and those steps as its time. Not at the turn's start: its
  // request is not out yet then, and a turn the model answers with text alone never needs the sandbox (its code
  // alone is tens of ms to load).
  ctx.on('agent/delta', (agent, delta) => {
    if (delta.kind === 'reasoning' || delta.kind === 'tool-input') warmSandbox(ctx)
    if (delta.kind === 'tool-input') spares.warm(agent.session.id, () => guessedRecipe(ctx, config, temps, agent))
    preloadParser(agent, delta)
  })
  ctx.on('session/event', (session, event) => {
    // Written by @keel/checkpoint when it rewinds the session's files (not a dependency: a string is enough).
    // After this event is published: its `job/kill` events cannot be appended from inside its listeners.
    if ((event.type as string) === 'checkpoint/restore') {
      queueMicrotask(() => void jobs.endSession(session, 'rewind'))
      void spares.drop(session.id)
    }
    if (event.type === 'turn/start') spares.begin(session.id)
  })
  ctx.inject(['invariants'], (ctx) => {
    ctx.invariants.allowBetweenTurns('job/exit')
    ctx.invariants.allowBetweenTurns('job/kill')
  })
  ctx.tools.register(bashTool(config, () => ctx.get('sandbox') ?? undefined, temps, jobs, spares))
  ctx.tools.register(jobOutputTool(jobs))
  ctx.tools.register(jobKillTool(jobs))
}

/**
 * The spare a session that has run no command gets: the settings its first sandboxed `bash` call most likely has,
 * from the permission mode (`read-only` where nothing may be written, else `workspace`; hosts asked about wherever a
 * policy can answer). A call with other settings leaves it unused, and the turn's end kills it.
 */
function guessedRecipe(ctx: Context, config: Config, temps: SessionTemps, agent: Agent): SpareRecipe | undefined {
  const permissions = ctx.get('permissions') as { mode?: PermissionMode; authorizeHost?: unknown } | undefined
  const mode = permissions?.mode
  const sandbox = ctx.get('sandbox')
  if (!mode || mode === 'yolo' || typeof sandbox?.prepare !== 'function') return undefined
  const tmp = temps.of(agent.id)
  return spareRecipe(sandbox, {
    session: agent.session.id,
    cwd: agent.cwd,
    level: writesNothing(mode) ? 'read-only' : 'workspace',
    tmpdir: tmp,
    network: typeof permissions?.authorizeHost === 'function',
    env: callEnv(config, tmp),
  })
}

/**
 * Gets the sandbox ready that the agent's commands will run in: the permission mode says whether they are sandboxed,
 * and whether they may reach hosts. Idempotent; the service starts nothing once it is disposed.
 */
function warmSandbox(ctx: Context): void {
  const mode = (ctx.get('permissions') as { mode?: PermissionMode } | undefined)?.mode
  if (!mode || mode === 'yolo') return
  const sandbox = ctx.get('sandbox')
  // A stand-in service (tests that exercise the policy, not the OS sandbox) may have no warm-up.
  if (typeof sandbox?.warm === 'function') sandbox.warm({ network: !writesNothing(mode) })
}
