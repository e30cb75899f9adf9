import { readFileSync, statSync } from 'node:fs'
import { helpText, modelSpec, parse, UsageError, workingDirectory } from './args.ts'
import type { CommandRun } from './commands.ts'
import { DEFAULT_COMPOSITION, SHIPPED_COMPOSITION } from './composition.ts'
import { FRONT_DOOR_STARTS } from './doors.ts'
import { type FirstRequest, sendFirstRequest, toolsKey } from './first-request.ts'
import { resolveMode } from './mode.ts'
import { printLimits } from './print-limits.ts'
import { printPrompt } from './print-prompt.ts'
import { shipped } from './root.ts'
import { describeSettings, resolveSettings } from './settings.ts'
import { askTrust, heldWarning, trustCommand } from './trust.ts'

// Everything here runs before cordis and the plugins load (commands.ts loads them): the arguments, the settings, and
// for print mode the prompt and its first request (first-request.ts), which can leave before the boot begins.
export const VERSION: string = JSON.parse(readFileSync(shipped('packages/cli/package.json'), 'utf8')).version

export async function main(argv: string[]): Promise<number> {
  let parsed
  try {
    parsed = parse(argv)
  } catch (error) {
    return (await import('./failure.ts')).fail(error)
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
  let first: FirstRequest | undefined
  let started: CommandRun['started']
  try {
    checkCwd(flags.cwd)
    if (command.kind === 'trust') {
      if (command.dir !== undefined) checkCwd(command.dir, 'trust')
      process.stdout.write(trustCommand(command.dir ?? workingDirectory(flags)) + '\n')
      return 0
    }
    if (flags.trust) (await import('@keel/settings')).trustForThisRun()
    const composition = flags.config ?? DEFAULT_COMPOSITION
    // `--model` as typed: a reopened session keeps its own /model choice unless this names one.
    const modelFlag = flags.model
    let settings = command.kind.startsWith('sessions-')
      ? undefined
      : await resolveSettings(flags, workingDirectory(flags), composition)
    if (command.kind === 'config') {
      process.stdout.write(describeSettings(settings!, !!flags.json) + '\n')
      return 0
    }
    // An untrusted folder: the TUI asks once before it takes the screen. Each door shows what was held back as a
    // notice after the boot (commands.ts); a command without a door says it here.
    if (settings?.held.length && command.kind === 'interactive' && (await askTrust(settings, workingDirectory(flags))))
      settings = await resolveSettings(flags, workingDirectory(flags), composition)
    else if (settings?.held.length && !DOOR_KINDS.has(command.kind)) process.stderr.write(heldWarning(settings) + '\n')
    // The settings' model and base URL reach every front door through the flags they would have come from.
    if (settings) flags = { ...flags, model: settings.model, 'base-url': settings.baseUrl }
    const run: CommandRun = { command, flags, settings, modelFlag, version: VERSION }
    if (command.kind === 'print') {
      // The run's limits and its answer's schema are checked before anything is read or sent: a bad one is exit 2.
      run.limits = printLimits(flags, settings)
      if (flags['output-schema'])
        run.outputSchema = await (await import('./print-schema.ts')).loadOutputSchema(flags['output-schema'])
      run.prompt = await printPrompt(command.prompt)
      if (!run.prompt) throw new UsageError('print mode needs a prompt: keel -p "…" (or on stdin)')
      if (run.outputSchema) run.prompt += run.outputSchema.instruction
      if (flags.image?.length)
        run.images = (await import('./print-images.ts')).readImages(flags.image, workingDirectory(flags))
      // A slash command's prompt is final only after its expansion, which needs the booted tools.
      const slash =
        run.prompt.startsWith('/') &&
        (await import('@keel/door/slash')).isSlashPrompt(run.prompt, workingDirectory(flags))
      // With images the model's vision is checked first (the agent refuses a text-only one before any request).
      if (!flags.config && !slash && !run.images) {
        run.toolsKey = toolsKey(VERSION, settings?.overrides)
        // A bad --mode or KEEL_MODE is refused before anything is sent (policy.ts applies them after boot).
        resolveMode(flags, process.env, undefined, 'print')
        first = await sendFirstRequest({
          flags,
          cwd: workingDirectory(flags),
          spec: modelSpec(flags),
          prompt: run.prompt,
          overrides: settings?.overrides,
          toolsKey: run.toolsKey,
        })
        run.first = first
        // Let the request's socket connect and write now: a local server has the request at once, and the chunks and
        // plugins the boot loads give a remote handshake more turns of the event loop.
        if (first) await new Promise((done) => setImmediate(done))
      }
      // The folder's first checkpoint begins now, beside the request and the boot: the turn's own snapshot, which the
      // first tool that may write waits for, is then a re-read of the shadow's stat cache.
      if (!flags.config) await prepareCheckpoints(settings?.overrides.checkpoint, workingDirectory(flags))
    }
    // A front door's first half (keel serve listens and serves its page while the plugins boot). Not with --config
    // (a composition file can fail to load) or --allow (a rule can fail to parse): nothing is served before what can
    // still fail has been checked; a bad --mode or KEEL_MODE is refused here.
    const start = FRONT_DOOR_STARTS[command.kind]
    if (start && !flags.config && !flags.allow?.length) {
      resolveMode(flags, process.env, undefined, command.kind)
      started = await (await start())({ flags, cwd: workingDirectory(flags), modelSpec: modelSpec(flags) })
      run.started = started
    }
    return await (await import('./commands.ts')).runCommand(run)
  } catch (error) {
    return (await import('./failure.ts')).fail(error)
  } finally {
    first?.discard()
    await started?.abandon()
  }
}

/** Begins the first snapshot of `cwd` (`@keel/checkpoint/prepare`) unless the settings turn checkpoints off. */
async function prepareCheckpoints(override: Record<string, unknown> | undefined, cwd: string): Promise<void> {
  const shipped = SHIPPED_COMPOSITION.find((entry) => entry.id === 'checkpoint')?.config as Record<string, unknown>
  const config = { ...shipped, ...override } as {
    enabled?: boolean
    maxFiles: number
    maxBytes: number
    listSeconds: number
  }
  if (config.enabled === false) return
  const { maxFiles, maxBytes, listSeconds } = config
  ;(await import('@keel/checkpoint/prepare')).prepare(cwd, { maxFiles, maxBytes, listSeconds })
}

/** The commands with a front door, which show the held-back line as a notice. */
const DOOR_KINDS = new Set(['print', 'interactive', 'serve', 'acp'])

/** --cwd (or `keel trust`'s folder) must name a folder that exists, checked before anything runs in it. */
function checkCwd(cwd: string | undefined, what = '--cwd'): void {
  if (cwd === undefined) return
  let isDirectory: boolean
  try {
    isDirectory = statSync(cwd).isDirectory()
  } catch {
    throw new UsageError(`${what} ${cwd}: no such directory`)
  }
  if (!isDirectory) throw new UsageError(`${what} ${cwd}: not a directory`)
}
