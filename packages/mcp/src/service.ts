import { type Context, Service } from 'cordis'
import type {} from '@keel/agent' // the agent/prepare event's declaration
import { notify } from '@keel/session'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { projectRoot, trustState } from '@keel/settings'
import { expandEnv, McpConfigError, readProjectServers, validateServers, type ServerConfig } from './config.ts'
import type { Connection, ServerState, TransportKind } from './connection.ts'
import { mcpTool, toolName } from './tools.ts'

declare module 'cordis' {
  interface Context {
    mcp: McpService
  }
}

export interface McpConfig {
  /** Servers from the settings files (`mcpServers`), by name. */
  servers: Record<string, ServerConfig>
  /** Also read `<project root>/.mcp.json` (the format other agents read). */
  projectFile: boolean
  startTimeoutMs: number
  callTimeoutMs: number
  maxResultChars: number
}

export interface ServerStatus {
  name: string
  transport: TransportKind
  state: ServerState
  error?: string
  /** Where it was configured: a settings file, `.mcp.json`, or an ACP session. */
  source: string
  /** The names the model sees (`mcp__<server>__<tool>`). */
  tools: string[]
  /** A running stdio server's process id. */
  pid?: number
}

interface Entry {
  connection: Connection
  source: string
  /** Disposers of the registered tools. */
  unregister: (() => void)[]
  /** The names registered (a name taken by another tool is not among them). */
  names: string[]
  /** ACP sessions using a session-scoped server; a configured server has none and lives as long as the plugin. */
  owners: Set<string>
}

const VERSION = '0.1.0'

let connectionModule: typeof import('./connection.ts') | undefined

/**
 * The MCP SDK (and the JSON-schema validator it brings) loads with the first server, not with Keel: most runs have
 * none. Once loaded, the module is at hand synchronously.
 */
async function loadConnection(): Promise<typeof import('./connection.ts')> {
  return (connectionModule ??= await import('./connection.ts'))
}

/**
 * `ctx.mcp`: the configured MCP servers, started together when the first agent prepares a request (or earlier, when
 * a front door calls `ready`), each server's tools registered on `ctx.tools` as `mcp__<server>__<tool>` while it is
 * up. A server that fails or dies is one `keel/notice` and its tools go; the session goes on.
 */
export class McpService extends Service {
  private readonly entries = new Map<string, Entry>()
  private started: Promise<void> | undefined
  /** Per trusted project root, the start of its `.mcp.json` servers (an ACP session's project is its own cwd's). */
  private readonly projects = new Map<string, Promise<void>>()
  private disposed = false

  constructor(
    ctx: Context,
    readonly config: McpConfig,
  ) {
    super(ctx, 'mcp', true)
    ctx.on('agent/prepare', (agent) => this.ready(agent.cwd))
    ctx.on('dispose', () => this.closeAll())
  }

  /**
   * Starts the configured servers (settings) once, and the `.mcp.json` servers of `cwd`'s project once per project
   * root (sessions of `keel acp` and `serve --all` each bring their own project), in parallel; resolves when each is
   * up or has failed. An untrusted project's `.mcp.json` waits for the person's trust, and is started by the first
   * `ready` after it. A configuration error is a warning, not a failed session. (Not named `start`: cordis calls a
   * service's `start()` itself, without a cwd.)
   */
  ready(cwd: string): Promise<void> {
    this.started ??= this.startAll(
      Object.entries(this.config.servers).map(([name, config]) => [name, config, 'settings']),
      cwd,
    )
    if (!this.config.projectFile) return this.started
    const root = projectRoot(cwd)
    let project = this.projects.get(root)
    // An untrusted folder's .mcp.json is someone else's command line: it waits for trust (@keel/settings).
    if (!project && trustState(cwd).trusted) {
      const both = Promise.all([this.started, this.startProject(cwd)]).then(() => {})
      this.projects.set(root, both)
      project = both
    }
    return project ?? this.started
  }

  private startProject(cwd: string): Promise<void> {
    const servers: [string, ServerConfig, string][] = []
    try {
      const project = readProjectServers(cwd)
      for (const [name, config] of Object.entries(project.servers)) {
        // The settings file wins over .mcp.json for the same name; a name already running is not started twice.
        if (this.config.servers[name] || this.entries.has(name)) continue
        servers.push([name, config, project.file!])
      }
    } catch (error) {
      this.warn((error as Error).message)
    }
    return this.startAll(servers, cwd)
  }

  private async startAll(servers: [string, ServerConfig, string][], cwd: string): Promise<void> {
    if (servers.length) await loadConnection()
    await Promise.all(servers.map(([name, config, source]) => this.connect(name, config, source, cwd)))
  }

  /** Connects one server; resolves when it is up or has failed. */
  private async connect(name: string, raw: ServerConfig, source: string, cwd: string, owner?: string): Promise<void> {
    if (this.disposed) return
    let config: ServerConfig
    try {
      config = expandEnv(raw, name)
    } catch (error) {
      this.warn(error instanceof McpConfigError ? error.message : `mcp server ${name}: ${(error as Error).message}`)
      return
    }
    // Both callers load the module first, so this stays synchronous up to `entries.set` (attach relies on that).
    const Connection = connectionModule?.Connection ?? (await loadConnection()).Connection
    const entry: Entry = {
      source,
      unregister: [],
      names: [],
      owners: new Set(owner ? [owner] : []),
      connection: undefined as never,
    }
    entry.connection = new Connection(name, config, {
      startTimeoutMs: this.config.startTimeoutMs,
      callTimeoutMs: this.config.callTimeoutMs,
      clientVersion: VERSION,
      cwd,
      onTools: (tools) => this.registerTools(entry, tools),
      onDropped: (dropped) =>
        this.warn(
          `mcp server ${name}: ${dropped.length === 1 ? 'a tool was' : 'tools were'} left out: ${dropped.join('; ')}`,
        ),
      // Its tools stay offered (the tool list every request carries stays the same, for the prompt cache), and a
      // call to one says at once that the server died, rather than "unknown tool" and a list of every other tool.
      onClosed: (reason) => {
        this.warn(`mcp server ${name} stopped: ${reason}; its tools fail until Keel restarts`)
      },
    })
    this.entries.set(name, entry)
    await entry.connection.start()
    if (this.disposed || this.entries.get(name) !== entry) {
      await entry.connection.close()
      return
    }
    if (entry.connection.state === 'ready') this.registerTools(entry, entry.connection.tools)
    else this.warn(`mcp server ${name} failed to start: ${entry.connection.error ?? 'unknown error'}`)
  }

  private registerTools(entry: Entry, tools: Tool[]): void {
    this.unregisterTools(entry)
    const seen = new Set<string>()
    for (const tool of tools) {
      const exposed = toolName(entry.connection.name, tool.name)
      if (seen.has(exposed) || this.ctx.tools.get(exposed)) {
        this.warn(`mcp server ${entry.connection.name}: tool ${JSON.stringify(tool.name)} skipped, ${exposed} is taken`)
        continue
      }
      seen.add(exposed)
      entry.names.push(exposed)
      entry.unregister.push(
        this.ctx.tools.register(
          mcpTool(entry.connection, tool, exposed, { maxResultChars: this.config.maxResultChars }),
        ),
      )
    }
  }

  private unregisterTools(entry: Entry): void {
    entry.names = []
    for (const dispose of entry.unregister.splice(0)) dispose()
  }

  /**
   * Servers an ACP client sent with `session/new` or `session/load`, for that session: connected now, closed with
   * `release(owner)`. A name already connected is shared, not started twice.
   */
  async attach(owner: string, servers: Record<string, ServerConfig>, cwd: string): Promise<void> {
    const valid = validateServers(servers, 'mcpServers')
    // Loaded before the checks below, so checking for a running server and registering a new one stay in one tick.
    await loadConnection()
    await Promise.all(
      Object.entries(valid).map(async ([name, config]) => {
        const existing = this.entries.get(name)
        if (existing) {
          existing.owners.add(owner)
          return
        }
        await this.connect(name, config, 'acp session', cwd, owner)
      }),
    )
  }

  /** Drops an ACP session's hold on its servers; a server no session holds any more is stopped. */
  async release(owner: string): Promise<void> {
    const closing: Promise<void>[] = []
    for (const [name, entry] of this.entries) {
      if (!entry.owners.delete(owner) || entry.owners.size) continue
      this.entries.delete(name)
      this.unregisterTools(entry)
      closing.push(entry.connection.close())
    }
    await Promise.all(closing)
  }

  status(): ServerStatus[] {
    return [...this.entries.values()].map(({ connection, source, names }) => ({
      name: connection.name,
      transport: connection.transportKind,
      state: connection.state,
      ...(connection.error ? { error: connection.error } : {}),
      source,
      tools: [...names],
      ...(connection.pid ? { pid: connection.pid } : {}),
    }))
  }

  /** One line about a server for the person (it failed to start, died, or was skipped); the session goes on. */
  private warn(message: string): void {
    notify(this.ctx, 'mcp', message)
  }

  private async closeAll(): Promise<void> {
    this.disposed = true
    const entries = [...this.entries.values()]
    this.entries.clear()
    await Promise.all(entries.map((entry) => entry.connection.close()))
  }
}
