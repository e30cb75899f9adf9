// A command once the plugins are up: boots cordis with the shipped composition (or --config's), applies the run's
// policy, runs the command or starts its front door, and unloads the plugins after. main.ts loads this module once
// the arguments, the settings and (for print mode) the prompt are known, and the first request may be on its way.
import type { Context } from 'cordis'
import { loadInstructions } from '@keel/settings'
import { escapeLine, terminalJson, type ImageBlock } from '@keel/session'
import { modelSpec, UsageError, workingDirectory, type Command, type Flags } from './args.ts'
import { createModel, openAgent } from './agent.ts'
import { FRONT_DOORS } from './doors.ts'
import { boot, shutdown } from './boot.ts'
import type { StartedDoor } from '@keel/door'
import type { FirstRequest } from './first-request.ts'
import { runPrint } from './print.ts'
import type { PrintLimits } from './print-limits.ts'
import type { OutputSchema } from './print-schema.ts'
import { applyPolicy } from './policy.ts'
import { runPlan } from './plan.ts'
import { listSessions, showSession } from './sessions.ts'
import { formatSearch, searchSessions } from './sessions-search.ts'
import { exportCommand } from './sessions-export.ts'
import { listMcp, mcpOf } from './mcp.ts'
import { forkSession, rewindSession } from './rewind.ts'
import { resolveSessionId } from './session-id.ts'
import { resolveStore } from './store.ts'
import { copySessions } from './sessions-copy.ts'
import type { ResolvedSettings } from './settings.ts'
import { heldNotice } from './trust.ts'
import type { NotifySettings } from '@keel/door/call-back'
import { stopYoungGenerationGrowth } from './memory.ts'

export interface CommandRun {
  command: Exclude<Command, { kind: 'help' | 'version' | 'config' }>
  flags: Flags
  settings: ResolvedSettings | undefined
  /** `--model` as typed: a reopened session keeps its own /model choice unless this names one. */
  modelFlag: string | undefined
  version: string
  /** Print mode's prompt, read already. */
  prompt?: string
  /** Print mode's `--image` files, read and checked already. */
  images?: ImageBlock[]
  /** Print mode's first request, when it was sent before boot. */
  first?: FirstRequest
  /** What print mode keeps its first request's tools under (first-request.ts). */
  toolsKey?: string
  /** What the front door started before the boot (doors.ts, FRONT_DOOR_STARTS). */
  started?: StartedDoor
  /** Print mode's limits (print-limits.ts), checked before boot. */
  limits?: PrintLimits
  /** Print mode's --output-schema, loaded and compiled before boot. */
  outputSchema?: OutputSchema
}

export async function runCommand(run: CommandRun): Promise<number> {
  const {
    command,
    settings,
    modelFlag,
    prompt,
    images,
    first,
    toolsKey,
    started,
    limits,
    outputSchema,
    version: VERSION,
  } = run
  let { flags } = run
  let ctx: Context | undefined
  try {
    // No --config: the shipped composition, wired directly; a file goes through the cordis Loader.
    const store = resolveStore(flags, settings, workingDirectory(flags))
    ctx = await boot({ composition: flags.config, overrides: settings?.overrides, store })
    stopYoungGenerationGrowth()
    // The TUI owns the screen (it reports skipped entries its own way); every other command warns on stderr.
    if (command.kind !== 'interactive') warnSkippedSessions(ctx)
    if (flags.resume) flags = { ...flags, resume: resolveSessionId(ctx, flags.resume) }
    if (
      command.kind === 'print' ||
      command.kind === 'interactive' ||
      command.kind === 'serve' ||
      command.kind === 'acp' ||
      command.kind === 'plan'
    ) {
      // `keel plan approve --mode auto` names the mode the approval switches to (on the log), not the run's.
      const policyFlags = command.kind === 'plan' ? { ...flags, mode: undefined } : flags
      for (const line of applyPolicy(ctx, policyFlags, command.kind)) process.stderr.write(`${escapeLine(line)}\n`)
      heldNotice(ctx, settings)
    }
    switch (command.kind) {
      case 'print':
        return await runPrint(ctx, flags, prompt!, { modelFlag, first, toolsKey, limits, outputSchema, images })
      case 'sessions-list':
        process.stdout.write((await listSessions(ctx, flags)) + '\n')
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
      case 'sessions-copy':
        process.stdout.write(
          `${copySessions(ctx, flags, store, command.id === undefined ? undefined : resolveSessionId(ctx, command.id))}\n`,
        )
        return 0
      case 'sessions-export':
        process.stdout.write(`${exportCommand(ctx, flags, resolveSessionId(ctx, command.id), command.format)}\n`)
        return 0
      case 'sessions-search': {
        const summaries = ctx.sessions.list(flags.all ? undefined : workingDirectory(flags))
        // A store that is not the JSONL files reads each session's events itself.
        const read = store ? (id: string) => ctx!.sessions.read(id).events : undefined
        const result = await searchSessions(summaries, command.text, undefined, read)
        process.stdout.write(
          `${flags.json ? terminalJson(result, 2) : formatSearch(result, command.text, Boolean(flags.all))}\n`,
        )
        return 0
      }
      case 'plan':
        return await runPlan(ctx, flags, command.words, modelFlag)
      default: {
        const load = FRONT_DOORS[command.kind]
        if (!load) throw new UsageError(`${command.kind} mode is not available in this build`)
        const door = await load()
        const booted = ctx
        // keel serve starts no agent until a page prompts: its MCP servers start now, so a server that cannot start
        // (an unset ${VAR}, a missing command) is said on stderr and on the page at once, not after the first prompt.
        if (command.kind === 'serve') void mcpOf(ctx)?.ready(workingDirectory(flags))
        // Over a shared store, this process's approvals can be answered from a page on another machine.
        if (store) (await import('@keel/door/ask-relay')).relayAsks(ctx)
        return await door({
          ctx,
          started,
          flags,
          prompt: command.kind === 'interactive' ? command.prompt : undefined,
          version: VERSION,
          cwd: workingDirectory(flags),
          modelSpec: modelSpec(flags),
          instructionFiles: loadInstructions(workingDirectory(flags)).files,
          notify: notifySettings(settings),
          openAgent: () => openAgent(booted, flags, { modelFlag }),
          createModel: (spec, baseUrl) => createModel(booted, flags, spec, baseUrl),
        })
      }
    }
  } finally {
    if (ctx) await shutdown(ctx)
  }
}

/** The settings' call-back choices, checked already by resolveSettings. */
function notifySettings(settings: ResolvedSettings | undefined): NotifySettings {
  const { notify, notifyWhen } = (settings?.merged.values ?? {}) as NotifySettings
  return { ...(notify ? { notify } : {}), ...(notifyWhen ? { notifyWhen } : {}) }
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
