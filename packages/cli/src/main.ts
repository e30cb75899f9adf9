import { readFileSync } from 'node:fs'
import type { Context } from 'cordis'
import { LlmError } from '@keel/llm'
import { escapeLine } from '@keel/session'
import { helpText, parse, UsageError } from './args.ts'
import { modelSpec, openAgent, workingDirectory } from './agent.ts'
import { FRONT_DOORS } from './doors.ts'
import { shipped } from './root.ts'
import { boot, BootError, shutdown } from './boot.ts'
import { runPrint } from './print.ts'
import { applyPolicy } from './policy.ts'
import { listSessions, showSession } from './sessions.ts'

export const VERSION: string = JSON.parse(readFileSync(shipped('packages/cli/package.json'), 'utf8')).version


export async function main(argv: string[]): Promise<number> {
  let parsed
  try {
    parsed = parse(argv)
  } catch (error) {
    return fail(error)
  }
  const { command, flags } = parsed
  if (command.kind === 'help') { process.stdout.write(helpText(VERSION) + '\n'); return 0 }
  if (command.kind === 'version') { process.stdout.write(`keel ${VERSION}\n`); return 0 }
  let ctx: Context | undefined
  try {
    ctx = await boot({ composition: flags.config })
    if (command.kind === 'print' || command.kind === 'interactive' || command.kind === 'serve' || command.kind === 'acp') {
      for (const line of applyPolicy(ctx, flags, command.kind)) process.stderr.write(`${escapeLine(line)}\n`)
    }
    switch (command.kind) {
      case 'print':
        return await runPrint(ctx, flags, command.prompt)
      case 'sessions-list':
        process.stdout.write(listSessions(ctx, flags) + '\n')
        return 0
      case 'sessions-show':
        process.stdout.write(showSession(ctx, flags, command.id) + '\n')
        return 0
      default: {
        const load = FRONT_DOORS[command.kind]
        if (!load) throw new UsageError(`${command.kind} mode is not available in this build`)
        const door = await load()
        const booted = ctx
        return await door({
          ctx, flags, command, version: VERSION, cwd: workingDirectory(flags), modelSpec: modelSpec(flags),
          openAgent: () => openAgent(booted, flags),
        })
      }
    }
  } catch (error) {
    return fail(error)
  } finally {
    if (ctx) await shutdown(ctx)
  }
}

/** One line on stderr: what went wrong, never a stack (KEEL_DEBUG=1 shows it). */
function fail(error: unknown): number {
  const known = error instanceof UsageError || error instanceof BootError || error instanceof LlmError
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`keel: ${escapeLine(message)}\n`)
  if (process.env.KEEL_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`)
  return known || error instanceof Error ? 2 : 1
}
