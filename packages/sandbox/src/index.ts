import { randomBytes } from 'node:crypto'
import { existsSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, relative, sep } from 'node:path'
import { protectedEntries, protectedTargets, unreadableTargets } from '@keel/settings'
import { directArgv } from './argv.ts'
import { diskState } from './disk-state.ts'
import { forgetBridges, recordBridges, sweepBridges } from './bridges.ts'
import { cachedProbe, probe, rememberProbe, type SandboxStatus } from './probe.ts'
import { which } from './which.ts'
import { recordPlaceholders, sweepPlaceholders } from './placeholders.ts'
import { type Dangerous, dangerousPaths, SEARCH_DEPTH } from './dangerous.ts'
import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime'

declare module 'cordis' {
  interface Context {
    sandbox: SandboxService
  }
}

/**
 * `workspace`: the cwd and the session's own temp dir writable (the system temp dir when none is given), except
 * Keel's protected paths; `read-only`: nothing writable.
 */
export type SandboxedLevel = 'workspace' | 'read-only'
export type { SandboxStatus }

export interface WrapOptions {
  cwd: string
  level: SandboxedLevel
  /** Hosts the command may reach (workspace level only); the plugin's `allowedDomains` when absent. */
  allowedDomains?: string[]
  /** The session's private temp dir: the only temp the command may write, and its TMPDIR. */
  tmpdir?: string
  /**
   * Asks about a host no allow list names while the command's connection waits (the permission policy, through the
   * bash tool); `key` is the session the command runs for. Asked only when this command is the one that can have
   * connected (see `askHost`); without it, such a host is refused.
   */
  network?: { key: string; ask: (host: string, port: number | undefined, signal: AbortSignal) => Promise<HostAnswer> }
}

/** The policy's answer about a host; a refusal's reason is what the command's proxy client reads. */
export type HostAnswer = { allowed: true } | { allowed: false; reason: string }

/** A host the sandbox refused a command, and why. */
export interface Refusal {
  host: string
  port: number | undefined
  reason: string
}

/** What to spawn instead of `bash -c <command>`; `dispose()` once the command has exited. */
export interface WrappedCommand {
  file: string
  args: string[]
  /** The hosts refused so far (filled while the command runs), for its result to name. */
  refused: readonly Refusal[]
  /**
   * Whether whatever the command starts dies with it: on Linux it runs in a PID namespace of its own, which the
   * kernel empties when the command's first process exits, so there is nothing left to look for afterwards.
   */
  contained: boolean
  dispose(): Promise<void>
}

/** A wrapped command that has not been disposed: who asks about its hosts, what it was refused. */
interface Running {
  network: WrapOptions['network']
  /** Wrapped with the proxy's relays and variables, so it can be the command behind a connection the proxy asks about. */
  proxied: boolean
  refused: Refusal[]
  /** One answer per host:port for the command's life (a client opens many connections to one host). */
  answers: Map<string, Promise<HostAnswer>>
  ended: AbortController
}

type Runtime = typeof import('@anthropic-ai/sandbox-runtime')['SandboxManager']

/** A sandbox wrapped ahead of the command it will run (see `SandboxService.prepare`). */
export interface PreparedSandbox {
  /** What to spawn, with a pipe for stdin: the shell it starts reads the command from there, to its end. */
  file: string
  args: string[]
  contained: boolean
  /**
   * Whether a wrap made now would be this one: the same paths protected and unreadable, nothing on disk under or
   * above them changed since (see disk-state.ts), the proxy as it was. False once taken or disposed.
   */
  current(): Promise<boolean>
  /** The sandbox becomes its command's: it counts as running from here, and a host it meets is asked of `network`. */
  take(network?: WrapOptions['network']): WrappedCommand
  /** Not taken after all: what it holds goes (call once its process has exited). */
  dispose(): Promise<void>
}

/** A wrap made, not yet counted as running. */
interface Made {
  wrapped: WrappedCommand
  /** The wrap's decisions (see {@link decide}) and the disk under them when it was made. */
  key: string
  state: string
  proxied: boolean
  runtime: { proxied(): boolean }
  take(network: WrapOptions['network']): void
}

/**
 * What a prepared sandbox's shell runs: the command read from stdin, then `bash -c` of it as the runtime's line would
 * run it (the same shell, `$0`, and a script parsed as it runs), with stdin at its end like an unprepared command's.
 * `cat`, not `read`: bash's `read` takes a pipe one byte per call, and a command may be a long heredoc.
 */
const PREPARED_SHELL = '__keel_command=$(cat) && exec "$BASH" -c "$__keel_command" </dev/null'

function proxiedBy(runtime: Runtime): boolean {
  return runtime.getLinuxHttpSocketPath() !== undefined || runtime.getProxyPort() !== undefined
}

/** What a wrap for `options` decides from the disk: what it may write, what it must not write or read, what it may reach. */
interface Decided {
  allowWrite: string[]
  denyWrite: string[]
  denyRead: string[]
  undo: string[]
  /** All of it, as one string a later wrap's can be compared with. */
  key: string
  /** Every path the wrap names, whose identity on disk its mounts depend on. */
  paths: string[]
}

async function decide(options: WrapOptions, domains: readonly string[]): Promise<Decided> {
  const workspace = options.level === 'workspace'
  const allowWrite = workspace ? [options.cwd, options.tmpdir ?? tmpdir()] : []
  const guarded = workspace ? await guard(options.cwd, allowWrite) : { deny: [], undo: [] }
  const denyWrite = [...guarded.deny, ...(workspace ? SHARED_TEMPS.filter((dir) => existsSync(dir)) : [])]
  const denyRead = unreadableTargets()
  return {
    allowWrite,
    denyWrite,
    denyRead,
    undo: guarded.undo,
    key: JSON.stringify([allowWrite, denyWrite, denyRead, guarded.undo, domains]),
    paths: [...allowWrite, ...denyWrite, ...denyRead, ...guarded.undo],
  }
}

/**
 * `ctx.sandbox`: runs a command under @anthropic-ai/sandbox-runtime (bubblewrap and socat on Linux, Seatbelt on
 * macOS). The runtime keeps process-wide state (its network proxies), so one service owns it: initialised on the
 * first wrap, reset when the plugin is disposed.
 */
export class SandboxService extends Service {
  private probed: Promise<SandboxStatus> | undefined
  /** The probe's answer came from the cache: checked for real once the first command has run (see probe.ts). */
  private unverified = false
  /**
   * Aborted when the plugin goes: no check for real starts after that, and one under way is let finish (its bwrap
   * takes milliseconds; killed in the middle of its start it left the namespace's init behind, orphaned, for good).
   */
  private readonly verifying = new AbortController()
  /** The runtime's code, loaded; what a wrap that can reach no host needs (see {@link wrap}). */
  private loading: Promise<Runtime> | undefined
  /** The runtime initialised: its proxy and the bridges to it, for commands that may reach a host. */
  private runtime: Promise<Runtime> | undefined
  /** Set when the plugin goes: no warm-up or wrap starts the runtime after that. */
  private disposed = false

  constructor(
    ctx: Context,
    readonly config: Config,
  ) {
    super(ctx, 'sandbox', true)
    ctx.on('dispose', async () => {
      this.disposed = true
      this.verifying.abort()
      const runtime = this.runtime
      this.runtime = undefined
      if (!runtime) return
      // A start under way is let finish, then undone: reset() in the middle of it loses the bridge process it has
      // spawned, which then keeps Keel from exiting. The next start in this process waits for it (the runtime's
      // state is process-wide: a reset still running would take down the bridge of the next start).
      const undone = runtime.then(
        (manager) =>
          manager
            .reset()
            .catch(() => {})
            .then(forgetBridges),
        () => {},
      )
      resetting = undone
      await undone
    })
  }

  /** Whether commands can be sandboxed here; probed once (tools present, user namespaces usable) and cached. */
  status(): Promise<SandboxStatus> {
    if (this.probed) return this.probed
    const cached = cachedProbe()
    this.unverified = cached !== undefined
    this.probed = cached ? Promise.resolve(cached) : this.probeNow()
    return this.probed
  }

  private probeNow(): Promise<SandboxStatus> {
    return probe().then((status) => {
      rememberProbe(status)
      return status
    })
  }

  /**
   * The real probe for a cached answer: at once after a wrap that failed, else a while after the first command
   * (right after it, its processes' start fell in the gap before the model's next request). A no takes effect.
   */
  private verify(soon: boolean): void {
    if (!this.unverified || this.disposed) return
    this.unverified = false
    const signal = this.verifying.signal
    const check = () => {
      if (signal.aborted) return
      void this.probeNow().then((status) => {
        if (!status.available && !signal.aborted) this.probed = Promise.resolve(status)
      })
    }
    if (soon) check()
    else setTimeout(check, VERIFY_AFTER_MS).unref()
  }

  /**
   * Gets the sandbox ready ahead of the first command, while the model thinks: the probe, the runtime's code, and
   * with `network` its proxy and bridges (the first sandboxed command of a process paid all of it, about 0.3 s). The
   * probe and the start run side by side. Never fails (a wrap says what went wrong) and is idempotent; after the
   * plugin is disposed it starts nothing, and a start under way is undone by the dispose.
   */
  warm(options: { network: boolean }): void {
    if (this.disposed) return
    void this.status().catch(() => undefined)
    void (options.network ? this.started() : this.loaded()).catch(() => undefined)
  }

  async wrap(command: string, options: WrapOptions): Promise<WrappedCommand> {
    try {
      return await this.wrapNow(command, options)
    } catch (error) {
      // A cached yes that no longer holds can fail the wrap itself (the runtime finds a part missing).
      this.verify(true)
      throw error
    }
  }

  private async wrapNow(command: string, options: WrapOptions): Promise<WrappedCommand> {
    const made = await this.make(command, options)
    made.take(options.network)
    return made.wrapped
  }

  /**
   * A sandbox made before its command is known: its shell reads the command from its stdin, runs it as `bash -c`
   * would, with stdin then at its end. Spawned while the model writes the next call, it takes a sandboxed command's
   * set-up (the wrap, bwrap's namespaces and mounts, the relays) off the call (see `Spares` in @keel/shell). It
   * counts as running only once taken; until then no host is asked of it. Used at most once.
   */
  async prepare(options: WrapOptions): Promise<PreparedSandbox> {
    const made = await this.make(PREPARED_SHELL, options, true)
    let taken = false
    return {
      file: made.wrapped.file,
      args: made.wrapped.args,
      contained: made.wrapped.contained,
      current: async () => {
        if (taken || this.disposed) return false
        const now = await decide(options, this.domainsOf(options))
        return now.key === made.key && made.proxied === made.runtime.proxied() && diskState(now.paths) === made.state
      },
      take: (network) => {
        if (taken) throw new Error('a prepared sandbox runs one command')
        taken = true
        made.take(network)
        return made.wrapped
      },
      dispose: () => made.wrapped.dispose(),
    }
  }

  private domainsOf(options: WrapOptions): string[] {
    return options.level === 'workspace' ? (options.allowedDomains ?? this.config.allowedDomains) : []
  }

  /** The wrap of `command` for `options`, not yet counted as running (`take` does that); `prepared`: see {@link prepare}. */
  private async make(command: string, options: WrapOptions, prepared = false): Promise<Made> {
    const status = await this.status()
    if (!status.available) throw new Error(`the sandbox is unavailable: ${status.reason}`)
    // bwrap mounts a fresh /dev in every sandbox, so a folder under it would not be there for the command to run in.
    if (underDev(options.cwd))
      throw new Error(`${options.cwd} is under /dev, which the sandbox replaces with its own; run Keel from elsewhere`)
    const workspace = options.level === 'workspace'
    const domains = this.domainsOf(options)
    // A command that can reach no host (read-only, or no list and no one to ask) needs neither the proxy nor the
    // relays to it: wrapped by a runtime that is configured but was never started, it gets `--unshare-net` alone, no
    // socat (about a third of a sandboxed call) and no bridge to start. Once the runtime is initialised for a command
    // that can reach hosts, every wrap of the process goes through the proxy: the runtime keeps one process-wide state.
    const reaches = workspace && (domains.length > 0 || options.network !== undefined)
    const runtime = reaches ? await this.started() : await this.loaded()
    // A start that failed leaves the runtime with no config, and a wrap with none would scan the process's cwd again.
    if (!runtime.getConfig()) runtime.updateConfig(baseConfig())
    // One wrap at a time, each with its placeholders made before the next looks at the disk (see placeholders.ts).
    const { decided, commandId, file, args, released, state } = await oneAtATime(async () => {
      // Both lists come from this session's cwd on every wrap: the runtime's own list of always-denied files was
      // computed for the process's cwd, which is not the session's under --cwd, in ACP, or with serve --all.
      const decided = await decide(options, domains)
      const { allowWrite, denyWrite, denyRead } = decided
      const custom: Partial<SandboxRuntimeConfig> = {
        filesystem: { denyRead, allowWrite, denyWrite },
        network: { allowedDomains: [], deniedDomains: [] },
      }
      // The runtime points TMPDIR at its own shared folder; the session's private one replaces it.
      const inner = options.tmpdir ? `export TMPDIR=${shellQuote(options.tmpdir)}; ${command}` : command
      // The proxy decides per connection; a per-command list rides on an unguessable id (see the runtime's README).
      const commandId = randomBytes(16).toString('base64url')
      const { argv } = await runtime.wrapWithSandboxArgv(inner, 'bash', custom, undefined, options.cwd, { commandId })
      // Without the runtime's shells in front of bwrap and of its seccomp helper: the same programs, arguments and
      // environment, two bash starts fewer (see argv.ts).
      const [file, ...args] = directArgv(argv)
      const released = await recordPlaceholders(file!, args, allowWrite)
      // After the placeholders: they are what the binds were made on.
      // Only a prepared sandbox is compared with the disk later (`current`); a wrap's command starts at once.
      return { decided, commandId, file: file!, args, released, state: prepared ? diskState(decided.paths) : '' }
    })
    if (domains.length) runtime.registerCommandNetworkLists(commandId, { allowedDomains: domains })
    const running: Running = {
      network: undefined,
      // Read after the wrap: one made while a start was under way waited for it and has the relays. A read-only
      // command wrapped by a started runtime has them too (its one state decides for every wrap).
      proxied: proxiedBy(runtime),
      refused: [],
      answers: new Map(),
      ended: new AbortController(),
    }
    let disposed = false
    const verify = () => this.verify(false)
    const wrapped: WrappedCommand = {
      file: file!,
      args,
      refused: running.refused,
      contained: process.platform === 'linux',
      async dispose() {
        if (disposed) return
        disposed = true
        commands.delete(running)
        running.ended.abort()
        if (domains.length) runtime.unregisterCommandNetworkLists(commandId)
        runtime.cleanupAfterCommand()
        // A protected file that could not be mounted over and that the command created goes again.
        for (const path of decided.undo) rmSync(path, { force: true, recursive: true })
        await released()
        verify()
      },
    }
    return {
      wrapped,
      key: decided.key,
      state,
      proxied: running.proxied,
      runtime: { proxied: () => proxiedBy(runtime) },
      take(network) {
        if (disposed) throw new Error('the sandbox was disposed before its command came')
        running.network = workspace ? network : undefined
        commands.add(running)
      },
    }
  }

  private loaded(): Promise<Runtime> {
    // What a Keel killed during a command left goes before this process's first wrap can mount over it.
    this.loading ??= Promise.all([import('@anthropic-ai/sandbox-runtime'), sweepPlaceholders()]).then(([module]) => {
      // Configured but not started: what a wrap that can reach no host needs (see wrap), and the base every wrap
      // goes by.
      if (!module.SandboxManager.getConfig()) module.SandboxManager.updateConfig(baseConfig())
      return module.SandboxManager
    })
    this.loading.catch(() => {
      this.loading = undefined
    })
    return this.loading
  }

  private started(): Promise<Runtime> {
    if (this.disposed) return Promise.reject(new Error('the sandbox plugin is disposed'))
    this.runtime ??= (async () => {
      // Read before any await: once this start exists, the dispose of this plugin waits for it.
      const previous = resetting
      const SandboxManager = await this.loaded()
      await previous
      if (this.disposed) throw new Error('the sandbox plugin is disposed')
      // Each wrap says what its level may write and which hosts it may reach, and a host none of that names is asked
      // about (askHost).
      // What a Keel killed while its runtime ran left (its host bridges) goes before this one starts its own.
      await sweepBridges()
      await SandboxManager.initialize(baseConfig(), ({ host, port }) => askHost(host, port))
      void recordBridges()
      return SandboxManager
    })()
    this.runtime.catch(() => {
      this.runtime = undefined
    })
    return this.runtime
  }
}

/**
 * The wrapped commands not yet disposed, by the order they were wrapped, of every service in the process: the
 * runtime's proxy and its ask callback are one per process (a second \`initialize\` keeps the first one's callback), so
 * the question of which command connected is asked of all of them, whichever plugin started the runtime.
 */
const commands = new Set<Running>()

/**
 * The runtime's ask about a host that no allow list named. Its callback does not say which command connected (only
 * a per-command allow list sees the id the connection presents), so a host is put to a command only when that
 * command is the one running command that goes through the proxy: read-only commands and ones that cannot ask go
 * through it too once the runtime is started, and another command's "yes" would let them through. With several
 * running, or the one that can have connected unable to ask, the host is refused, naming why.
 */
async function askHost(host: string, port: number | undefined): Promise<boolean | { allow: false; reason: string }> {
  const candidates = [...commands].filter((entry) => entry.proxied)
  const target = candidates.length === 1 ? candidates[0]! : undefined
  let answer: HostAnswer
  if (!target?.network) {
    const reason =
      candidates.length > 1
        ? `${host} is not on the sandbox's allowed domains, and ${candidates.length} sandboxed commands are running, so the sandbox cannot tell which one connected and asks no one`
        : `${host} is not on the sandbox's allowed domains`
    answer = { allowed: false, reason }
  } else {
    const id = `${host}:${port ?? ''}`
    let pending = target.answers.get(id)
    if (!pending) {
      const { ask } = target.network
      pending = ask(host, port, target.ended.signal).catch((error: unknown) => ({
        allowed: false as const,
        reason: `${host}: the question could not be answered (${(error as Error).message})`,
      }))
      target.answers.set(id, pending)
    }
    answer = await pending
  }
  if (answer.allowed) return true
  const refusal = { host, port, reason: answer.reason }
  // Each command that can have connected names the refusal in its result: one of them did.
  for (const entry of candidates)
    if (!entry.refused.some((r) => r.host === host && r.port === port)) entry.refused.push(refusal)
  return { allow: false, reason: answer.reason }
}

/** How long after the first command a cached probe answer is checked (a run that ends sooner checks nothing). */
const VERIFY_AFTER_MS = 2000

/** The wraps of the process, one after another (see placeholders.ts for why). */
let wrapping: Promise<unknown> = Promise.resolve()

function oneAtATime<T>(make: () => Promise<T>): Promise<T> {
  const next = wrapping.then(make)
  wrapping = next.catch(() => {})
  return next
}

/** The last plugin's reset of the runtime, which a start waits for: the runtime's state is one per process. */
let resetting: Promise<void> = Promise.resolve()

/** The runtime's own temp folder (writable in every sandbox, shared by every run), denied when it exists. */
const SHARED_TEMPS = ['/tmp/claude', '/private/tmp/claude']

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

let binaries: { bwrap?: string; socat?: string; true?: string } | undefined

/**
 * What the runtime goes by, started or not: deny everything, each wrap says what its level may write and reach.
 * Binaries are named once: otherwise it looks bwrap up with a synchronous `which` on every wrap. Its own scan for the
 * always-denied files is of the process's cwd, at every wrap (a ripgrep run, 6–80 ms): Keel finds them from the
 * wrap's cwd instead (`alwaysDenied`), so the runtime's ripgrep is `true`, which lists nothing. The depth is set all
 * the same, to the one Keel's scan uses.
 */
function baseConfig(): SandboxRuntimeConfig {
  binaries ??= { bwrap: which('bwrap'), socat: which('socat'), true: which('true') }
  const { bwrap, socat } = binaries
  return {
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
    ripgrep: { command: binaries.true ?? 'true' },
    mandatoryDenySearchDepth: SEARCH_DEPTH,
    ...(bwrap ? { bwrapPath: bwrap } : {}),
    ...(socat ? { socatPath: socat } : {}),
  }
}

/**
 * What a workspace command in `cwd` that may write `writable` must not write, and what to remove if it made it (see
 * `protectedTargets`): Keel's protected paths of the folders from the project root down to `cwd`, the runtime's
 * always-denied files below `cwd`, and, in each repository found below `cwd`, Keel's protected paths inside `.git`
 * (the runtime's list has its hooks and config only; a `commondir` there points git at hooks and config anywhere).
 */
async function guard(cwd: string, writable: string[]): Promise<{ deny: string[]; undo: string[] }> {
  const entries = protectedEntries(cwd)
  const own = protectedTargets(cwd, entries)
  const found = await alwaysDenied(cwd, writable)
  const inGit = entries.filter((entry) => entry.startsWith('.git/'))
  const nested = found.repos.length ? protectedTargets(cwd, inGit, found.repos) : { deny: [], undo: [] }
  return { deny: [...own.deny, ...found.paths, ...nested.deny], undo: [...own.undo, ...nested.undo] }
}

/**
 * The always-denied files for a wrap in `cwd` that may write `writable`: found from `cwd`, and from the process's own
 * cwd too where that lies inside what the wrap may write but not at its top (`keel --cwd ..`): the runtime's scan of
 * it, which `baseConfig` turns off, reached that deep below it.
 */
async function alwaysDenied(cwd: string, writable: string[]): Promise<Dangerous> {
  const folders = [cwd]
  let here: string | undefined
  try {
    here = process.cwd()
  } catch {
    // The process's cwd was removed: there is nothing of it to protect.
  }
  if (here && here !== cwd && writable.some((root) => [root, real(root)].some((form) => inside(here, form))))
    folders.push(here)
  const found = await Promise.all(folders.map((folder) => dangerousPaths(folder)))
  return { paths: found.flatMap((one) => one.paths), repos: found.flatMap((one) => one.repos) }
}

function underDev(path: string): boolean {
  const form = real(path)
  return form === '/dev' || form.startsWith('/dev/')
}

function inside(path: string, root: string): boolean {
  const rel = relative(root, path)
  return rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)
}

function real(path: string): string {
  try {
    return realpathSync.native(path)
  } catch {
    return path
  }
}

export const name = 'keel-sandbox'

export interface Config {
  /** Hosts a workspace-level command may reach; none by default. */
  allowedDomains: string[]
}

export const Config: Schema<Config> = Schema.object({
  allowedDomains: Schema.array(Schema.string())
    .default([])
    .description(
      'Hosts a command in the workspace sandbox may reach (e.g. registry.npmjs.org, *.github.com); none by default.',
    ),
})

export function apply(ctx: Context, config: Config): void {
  ctx.plugin(SandboxService, config)
}
