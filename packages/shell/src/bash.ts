import { defineTool, Type } from '@keel/tools'
import type { SandboxService, WrappedCommand } from '@keel/sandbox'
import type { Config } from './config.ts'
import { commandEnv } from './env.ts'
import type { Jobs } from './jobs.ts'
import { CappedOutput } from './output.ts'
import { leftoverCount, withLeftoverCount } from './leftovers.ts'
import { runCommand, type RunOutcome } from './run.ts'
import { type Spares, spareKey, spareRecipe, type TakenSpare } from './spares.ts'
import { SessionTemps } from './temp.ts'

const Parameters = Type.Object(
  {
    command: Type.String({ description: 'The bash command to run.' }),
    timeout: Type.Optional(Type.Number({ description: 'Seconds before the command is killed.', minimum: 1 })),
    background: Type.Optional(
      Type.Boolean({
        description:
          'Start it as a background job (a dev server, a watcher) and return its id at once; read it with job_output, stop it with job_kill.',
      }),
    ),
  },
  { additionalProperties: false },
)

/** The status line under the output: how the command ended, and what it left behind that was killed. */
export function statusText(outcome: Exclude<RunOutcome, { kind: 'spawn-error' }>, timeoutSeconds: number): string {
  if (outcome.kind === 'timeout') return `[killed after the ${timeoutSeconds} s timeout]`
  if (outcome.kind === 'cancelled') return '[cancelled by the user]'
  const status =
    outcome.code === null
      ? `[killed by ${outcome.signal}]`
      : `[exit code ${outcome.code} · ${outcome.seconds.toFixed(1)} s]`
  if (!outcome.leftovers) return status
  const what =
    outcome.leftovers === 'some'
      ? 'background processes'
      : `${outcome.leftovers} background process${outcome.leftovers === 1 ? '' : 'es'}`
  return `${status}\n[killed ${what} the command left running]`
}

/** How the command ended, for front ends (they decide "failed" from it through `resultStatus` in @keel/session). */
function exitOf(outcome: Exclude<RunOutcome, { kind: 'spawn-error' | 'cancelled' }>, timeoutSeconds: number) {
  if (outcome.kind === 'timeout') return { kind: 'timeout' as const, seconds: timeoutSeconds }
  if (outcome.code === null) return { kind: 'killed' as const, signal: outcome.signal ?? 'a signal' }
  return { kind: 'exited' as const, code: outcome.code }
}

/** A command's environment: Keel's, through the policy of env.ts, with the session's own temp folder. */
export function callEnv(config: Config, tmp: string): Record<string, string> {
  return commandEnv(config.env ?? { passthrough: [], set: {} }, { TMPDIR: tmp })
}

/** The sandbox service when it is loaded; `bash` asks it each call, so a sandbox loaded later is used. */
export type SandboxSource = () => SandboxService | undefined

/** Starts the line a command's result gets for each host the sandbox refused it. */
const REFUSED_PREFIX = 'keel: the sandbox refused network access to '

export function bashTool(
  config: Config,
  sandbox: SandboxSource = () => undefined,
  temps: SessionTemps = new SessionTemps(),
  jobs?: Jobs,
  spares?: Spares,
) {
  return defineTool({
    name: 'bash',
    description: `Run a bash command in the working directory and return its combined stdout and stderr with the exit code. Output longer than ${config.outputHead + config.outputTail} characters keeps its start and end. Timeout defaults to ${config.defaultTimeout} s (max ${config.maxTimeout}). No interactive input. Background processes are killed when the command exits${jobs ? '; for a server or watcher that must keep running, pass background: true' : ''}.`,
    parameters: Parameters,
    access: (args) => ({ kind: 'execute', command: args.command }),
    presentCall: (args) => ({ title: args.command, kind: 'execute', rawInput: args }),
    async execute(args, exec) {
      const timeoutSeconds = Math.min(args.timeout ?? config.defaultTimeout, config.maxTimeout)
      const output = new CappedOutput(config.outputHead, config.outputTail)
      const cwd = exec.agent?.cwd ?? process.cwd()
      const tmp = temps.of(exec.agent?.id ?? 'default')
      const env = callEnv(config, tmp)
      let wrapped: WrappedCommand | undefined
      let spare: TakenSpare | undefined
      let nextSpare: (() => void) | undefined
      if (exec.sandbox === 'workspace' || exec.sandbox === 'read-only') {
        // Asked to contain the command: it runs in the sandbox or not at all, never unsandboxed.
        const service = sandbox()
        if (!service)
          return {
            isError: true,
            content: [
              {
                type: 'text',
                text: `Error: this command must run in the ${exec.sandbox} sandbox, but the sandbox plugin (@keel/sandbox) is not loaded; the command was not run`,
              },
            ],
          }
        try {
          // A host no allow list names is asked about through the permission policy, by this call's session.
          const session = exec.agent?.session
          const key = session?.header.parent?.sessionId ?? session?.id ?? 'default'
          const options = {
            cwd,
            level: exec.sandbox,
            tmpdir: tmp,
            ...(exec.network ? { network: { key, ask: exec.network } } : {}),
          }
          // A foreground command of a turn runs in a sandbox started for it after the turn's last one, if that still
          // fits, and leaves one for the next (see spares.ts: none outside a turn).
          const settings =
            spares && session && !args.background && typeof service.prepare === 'function'
              ? { session: session.id, cwd, level: exec.sandbox, tmpdir: tmp, network: exec.network !== undefined, env }
              : undefined
          spare = settings ? await spares!.take(spareKey(settings)) : undefined
          wrapped = spare
            ? spare.sandbox.take(options.network)
            : await service.wrap(args.background ? args.command : withLeftoverCount(args.command), options)
          if (settings) nextSpare = () => spares!.prepare(spareRecipe(service, settings))
        } catch (error) {
          return {
            isError: true,
            content: [
              {
                type: 'text',
                text: `Error: could not start the ${exec.sandbox} sandbox: ${(error as Error).message}; the command was not run`,
              },
            ],
          }
        }
      }
      if (args.background) {
        const session = exec.agent?.session
        const fail = (text: string) => {
          void wrapped?.dispose().catch(() => {})
          return { isError: true, content: [{ type: 'text' as const, text: `Error: ${text}` }] }
        }
        if (!jobs || !session) return fail('background jobs need an agent session; the command was not run')
        const started = jobs.start({
          session,
          command: args.command,
          sandbox: exec.sandbox ?? 'off',
          file: wrapped?.file ?? 'bash',
          args: wrapped?.args ?? ['-c', args.command],
          cwd,
          env,
          dispose: () => wrapped?.dispose() ?? Promise.resolve(),
        })
        if ('error' in started) return fail(`${started.error}; the command was not run`)
        return `Started background job ${started.id}. Read its output with job_output({ "id": "${started.id}" }) and stop it with job_kill; it is killed when the session ends.`
      }
      let outcome: RunOutcome
      let report = ''
      try {
        outcome = await runCommand(
          {
            file: wrapped?.file ?? 'bash',
            args: wrapped?.args ?? ['-c', args.command],
            cwd,
            env,
            timeoutMs: timeoutSeconds * 1000,
            signal: exec.signal,
            onText: (text) => {
              output.push(text)
              exec.onUpdate?.(text)
            },
            ...(wrapped
              ? {
                  onReport: (text: string) => {
                    report += text
                  },
                  contained: wrapped.contained,
                }
              : {}),
          },
          spare ? { shell: spare.shell, input: withLeftoverCount(args.command) } : undefined,
        )
      } finally {
        // Before this one's wrap goes: the placeholders it shares with the next stay on disk rather than go and return.
        if (!exec.signal.aborted) nextSpare?.()
        await wrapped?.dispose().catch(() => {})
      }
      if (outcome.kind === 'spawn-error')
        return { isError: true, content: [{ type: 'text', text: `Error: could not start bash: ${outcome.message}` }] }
      // The command's own error for a refused host rarely names it; this says which host and what lets it through.
      for (const refusal of wrapped?.refused ?? [])
        output.push(`\n${REFUSED_PREFIX}${refusal.host}${refusal.port ? `:${refusal.port}` : ''}: ${refusal.reason}\n`)
      const body = output.text().replace(/\s+$/, '')
      // In the sandbox the leftovers die with its PID namespace; the outside count would see the sandbox's own relays
      // and not them, so the shell's own count (leftovers.ts) is what is said.
      const status = statusText(
        wrapped && outcome.kind === 'exited' ? { ...outcome, leftovers: leftoverCount(report) ?? 0 } : outcome,
        timeoutSeconds,
      )
      return {
        isError: outcome.kind !== 'exited',
        content: [{ type: 'text', text: body ? `${body}\n${status}` : status }],
        // A cancel is the agent's word (`cancelled` details), not the command's failure.
        details:
          outcome.kind === 'cancelled'
            ? { kind: 'cancelled' }
            : { kind: 'command', exit: exitOf(outcome, timeoutSeconds) },
      }
    },
  })
}
