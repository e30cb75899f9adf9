import { readFileSync, statSync } from 'node:fs'
import type { Context } from 'cordis'
import { loadInstructions, SettingsError } from '@keel/settings'
import { LlmError } from '@keel/llm'
import {
  escapeLine,
  SessionFileError,
  SessionLockedError,
  SessionNotFoundError,
  SessionWriteError,
} from '@keel/session'
import { helpText, parse, UsageError } from './args.ts'
import { createModel, modelSpec, openAgent, workingDirectory } from './agent.ts'
import { FRONT_DOORS } from './doors.ts'
import { shipped } from './root.ts'
import { boot, BootError, DEFAULT_COMPOSITION, shutdown } from './boot.ts'
import { runPrint } from './print.ts'
import { applyPolicy } from './policy.ts'
import { listSessions, showSession } from './sessions.ts'
import { listMcp } from './mcp.ts'
import { forkSession, rewindSession } from './rewind.ts'
import { RewindError } from '@keel/checkpoint'
import { resolveSessionId } from './session-id.ts'
import { describeSettings, resolveSettings } from './settings.ts'
import { missingKeyHelp } from './first-run.ts'
import { stopYoungGenerationGrowth } from './memory.ts'

export const VERSION: string = JSON.parse(readFileSync(shipped('packages/cli/package.json'), 'utf8')).version

export async function main(argv: string[]): Promise<number> {
  let parsed
  try {
    parsed = parse(argv)
  } catch (error) {
    return fail(error)
  }
  const { command } = parsed
  let { flags } = parsed
  if (command.kind === 'help') {
    process.stdout.write(helpText(VERSION) + '\n')
    return 0
  }
  if (command.kind === 'version') {
    process.stdout.write(`keel ${VERSION}\n`)
    return 0
  }
  let ctx: Context | undefined
  try {
    checkCwd(flags.cwd)
    const composition = flags.config ?? DEFAULT_COMPOSITION
    // `--model` as typed: a reopened session keeps its own /model choice unless this names one.
    const modelFlag = flags.model
    const settings = command.kind.startsWith('sessions-')
      ? undefined
      : await resolveSettings(flags, workingDirectory(flags), composition)
    if (command.kind === 'config') {
      process.stdout.write(describeSettings(settings!, !!flags.json) + '\n')
      return 0
    }
    // The settings' model and base URL reach every front door through the flags they would have come from.
    if (settings) flags = { ...flags, model: settings.model, 'base-url': settings.baseUrl }
    // No --config: the shipped composition, wired directly; a file goes through the cordis Loader.
    ctx = await boot({ composition: flags.config, overrides: settings?.overrides })
    // Soon, not now: in print mode the event loop's next turn comes once the first model request is out.
    setImmediate(stopYoungGenerationGrowth)
    // The TUI owns the screen (it reports skipped entries its own way); every other command warns on stderr.
    if (command.kind !== 'interactive') warnSkippedSessions(ctx)
    if (flags.resume) flags = { ...flags, resume: resolveSessionId(ctx, flags.resume) }
    if (
      command.kind === 'print' ||
      command.kind === 'interactive' ||
      command.kind === 'serve' ||
      command.kind === 'acp'
    ) {
      for (const line of applyPolicy(ctx, flags, command.kind)) process.stderr.write(`${escapeLine(line)}\n`)
    }
    switch (command.kind) {
      case 'print':
        return await runPrint(ctx, flags, command.prompt, { modelFlag })
      case 'sessions-list':
        process.stdout.write(listSessions(ctx, flags) + '\n')
        return 0
      case 'sessions-show':
        process.stdout.write(showSession(ctx, flags, resolveSessionId(ctx, command.id)) + '\n')
        return 0
      case 'mcp-list':
        process.stdout.write((await listMcp(ctx, flags)) + '\n')
        return 0
      case 'sessions-rewind':
        process.stdout.write((await rewindSession(ctx, flags, resolveSessionId(ctx, command.id))) + '\n')
        return 0
      case 'sessions-fork':
        process.stdout.write(forkSession(ctx, flags, resolveSessionId(ctx, command.id)) + '\n')
        return 0
      default: {
        const load = FRONT_DOORS[command.kind]
        if (!load) throw new UsageError(`${command.kind} mode is not available in this build`)
        const door = await load()
        const booted = ctx
        return await door({
          ctx,
          flags,
          prompt: command.kind === 'interactive' ? command.prompt : undefined,
          version: VERSION,
          cwd: workingDirectory(flags),
          modelSpec: modelSpec(flags),
          instructionFiles: loadInstructions(workingDirectory(flags)).files,
          openAgent: () => openAgent(booted, flags, { modelFlag }),
          createModel: (spec) => createModel(booted, flags, spec),
        })
      }
    }
  } catch (error) {
    return fail(error)
  } finally {
    if (ctx) await shutdown(ctx)
  }
}

/** One line on stderr per entry of KEEL_HOME that is not a session (a FIFO, a symlink, a bad header…), once per run. */
function warnSkippedSessions(ctx: Context): void {
  const warned = new Set<string>()
  ctx.on('session/skipped', (path, problem) => {
    if (warned.has(path)) return
    warned.add(path)
    process.stderr.write(`keel: warning: ${escapeLine(path)}: ${escapeLine(problem)}\n`)
  })
}

/**
 * The command was right, the data or the disk was not: a session file, a lock, the disk, or a rewind refused
 * (conflicts, no checkpoints). Exit 1, not the usage code 2.
 */
const dataErrors = [SessionFileError, SessionLockedError, SessionNotFoundError, SessionWriteError, RewindError]

/** --cwd must name a folder that exists, checked before anything runs in it. */
function checkCwd(cwd: string | undefined): void {
  if (cwd === undefined) return
  let isDirectory: boolean
  try {
    isDirectory = statSync(cwd).isDirectory()
  } catch {
    throw new UsageError(`--cwd ${cwd}: no such directory`)
  }
  if (!isDirectory) throw new UsageError(`--cwd ${cwd}: not a directory`)
}

/** What went wrong on stderr, one line (a list of choices may follow), never a stack (KEEL_DEBUG=1 shows it). */
function fail(error: unknown): number {
  const known =
    error instanceof UsageError ||
    error instanceof BootError ||
    error instanceof LlmError ||
    error instanceof SettingsError
  const message = missingKeyHelp(error) ?? (error instanceof Error ? error.message : String(error))
  process.stderr.write(
    message
      .split('\n')
      .map((line) => `keel: ${escapeLine(line)}\n`)
      .join(''),
  )
  if (process.env.KEEL_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`)
  if (dataErrors.some((type) => error instanceof type)) return 1
  return known || error instanceof Error ? 2 : 1
}
