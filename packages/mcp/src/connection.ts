import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  ResultSchema,
  type Tool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { basename } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isRemote, type ServerConfig } from './config.ts'
import { screenTools } from './limits.ts'
import { stopServer } from './stop.ts'
import type { McpCallResult } from './result.ts'

export type ServerState = 'starting' | 'ready' | 'failed' | 'closed'
export type TransportKind = 'stdio' | 'http' | 'sse'

export interface ConnectionOptions {
  startTimeoutMs: number
  callTimeoutMs: number
  clientVersion: string
  /** Working directory for a stdio server without its own `cwd`. */
  cwd: string
  /** The server's tool list changed (a `tools/list_changed` notification was handled, or it was re-initialized). */
  onTools(tools: Tool[]): void
  /** Tools of a listing that were dropped (over a cap, or not valid), one phrase each. */
  onDropped(dropped: string[]): void
  /** The server went away after it was ready: its process exited or its connection closed. */
  onClosed(reason: string): void
}

/** Keeps the last few KB a stdio server wrote to stderr, to explain why it failed. */
class StderrTail {
  private text = ''
  push(chunk: Buffer | string): void {
    this.text = (this.text + chunk.toString()).slice(-2000)
  }
  lastLine(): string | undefined {
    const line = this.text.trim().split('\n').pop()?.trim()
    return line ? line.slice(0, 300) : undefined
  }
}

/** One MCP server: its transport, the SDK client over it, and its tools while it is up. */
export class Connection {
  state: ServerState = 'starting'
  error: string | undefined
  tools: Tool[] = []
  transportKind: TransportKind
  private client: Client | undefined
  private stdio: StdioClientTransport | undefined
  private closing = false
  private readonly stderr = new StderrTail()
  /** The calls under way, each with the controller that ends it if the server dies meanwhile. */
  private readonly calls = new Set<AbortController>()
  /** A re-initialization under way (a remote server restarted, or its session expired). */
  private reconnecting: Promise<boolean> | undefined

  constructor(
    readonly name: string,
    readonly config: ServerConfig,
    private readonly options: ConnectionOptions,
  ) {
    this.transportKind = isRemote(this.config) ? (this.config.type === 'sse' ? 'sse' : 'http') : 'stdio'
  }

  /** Connects and lists the tools; never throws (a failure is `state: 'failed'` with `error`). */
  async start(): Promise<void> {
    try {
      await this.open()
      if (this.closing) return
      this.state = 'ready'
      this.error = undefined
    } catch (error) {
      this.fail(this.explain(error))
      await this.shut(this.client)
    }
  }

  private async open(): Promise<void> {
    {
      const remote = isRemote(this.config)
      if (remote && !this.config.type) {
        // Streamable HTTP first; servers that only speak the 2024 SSE transport answer it with a 4xx.
        try {
          await this.connect(this.transport('http'))
          this.transportKind = 'http'
        } catch (error) {
          if (this.closing) throw error
          await this.connect(this.transport('sse'))
          this.transportKind = 'sse'
        }
      } else {
        await this.connect(this.transport(this.transportKind))
      }
      this.tools = await this.listTools()
    }
  }

  private transport(kind: TransportKind): Transport {
    const config = this.config
    if (isRemote(config)) {
      const requestInit = config.headers ? { headers: config.headers } : undefined
      return kind === 'sse'
        ? new SSEClientTransport(new URL(config.url), { requestInit })
        : new StreamableHTTPClientTransport(new URL(config.url), { requestInit })
    }
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args ?? [],
      // The SDK's safe default set (PATH, HOME, …) plus what the configuration names: API keys in Keel's own
      // environment do not leak to every server.
      env: { ...getDefaultEnvironment(), ...config.env },
      cwd: config.cwd ?? this.options.cwd,
      stderr: 'pipe',
    })
    transport.stderr?.on('data', (chunk: Buffer) => this.stderr.push(chunk))
    this.stdio = transport
    return transport
  }

  private async connect(transport: Transport): Promise<void> {
    const client = new Client(
      { name: 'keel', version: this.options.clientVersion },
      {
        // Roots: the session's working directory, for servers (a filesystem server without arguments) that ask.
        capabilities: { roots: { listChanged: false } },
      },
    )
    client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(this.options.cwd).href, name: basename(this.options.cwd) }],
    }))
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (this.state !== 'ready' || this.client !== client) return
      const tools = await this.listTools().catch(() => undefined)
      if (!tools || this.client !== client) return
      this.tools = tools
      this.options.onTools(tools)
    })
    // A remote server that dies mid-call leaves the request waiting for its whole timeout (the transport only
    // retries the stream): an error of the transport while calls run asks the server whether it is still there.
    client.onerror = () => {
      if (this.calls.size && this.client === client && isRemote(this.config)) void this.checkAlive(client)
    }
    client.onclose = () => {
      if (this.closing || this.client !== client) return
      const wasReady = this.state === 'ready'
      this.state = wasReady ? 'closed' : 'failed'
      this.error = `the connection closed${this.stderr.lastLine() ? ` (stderr: ${this.stderr.lastLine()})` : ''}`
      if (wasReady) this.options.onClosed(this.error)
    }
    this.client = client
    try {
      await withTimeout(
        client.connect(transport, { timeout: this.options.startTimeoutMs }),
        this.options.startTimeoutMs,
        'start',
      )
    } catch (error) {
      this.client = undefined
      await this.shut(client)
      throw error
    }
  }

  /** Every page of the server's tools, each tool checked on its own (limits.ts): one bad tool drops alone. */
  private async listTools(): Promise<Tool[]> {
    const raw: unknown[] = []
    let cursor: string | undefined
    // Bounded: a server that pages forever cannot hang the start.
    for (let page = 0; page < 100; page++) {
      // The SDK's listTools validates the whole answer at once, so one invalid schema failed the server.
      const result = (await this.client!.request(
        { method: 'tools/list', params: cursor ? { cursor } : {} },
        ResultSchema,
        { timeout: this.options.startTimeoutMs },
      )) as { tools?: unknown; nextCursor?: unknown }
      if (Array.isArray(result.tools)) raw.push(...result.tools)
      cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined
      if (!cursor || raw.length > 10_000) break
    }
    const { tools, dropped } = screenTools(raw)
    if (dropped.length) this.options.onDropped(dropped)
    return tools
  }

  /** Asks a remote server, during a call, whether it is still there; if not, its calls end now, saying so. */
  private async checkAlive(client: Client): Promise<void> {
    const alive = await client.ping({ timeout: 3000 }).then(
      () => true,
      () => false,
    )
    if (alive || this.client !== client) return
    this.error = 'it stopped answering (the connection failed during a call)'
    for (const call of this.calls) call.abort(DIED)
  }

  /**
   * A new session with a remote server whose old one is gone (it restarted, or its session expired): initialize
   * again and list its tools. False, with the server marked failed, when it does not answer.
   */
  private reconnect(): Promise<boolean> {
    this.reconnecting ??= (async () => {
      const old = this.client
      this.client = undefined
      await old?.close().catch(() => {})
      try {
        await this.open()
        if (this.closing) return false
        this.state = 'ready'
        this.error = undefined
        this.options.onTools(this.tools)
        return true
      } catch (error) {
        this.fail(`it cannot be reached: ${this.explain(error)}`)
        return false
      }
    })().finally(() => {
      this.reconnecting = undefined
    })
    return this.reconnecting
  }

  /** The stdio server's process id while it runs. */
  get pid(): number | undefined {
    return this.stdio?.pid ?? undefined
  }

  /**
   * Calls a tool; rejects with a one-line message on timeout, on a closed connection, when the server died or when
   * cancelled. A remote server that lost the session (it restarted) or that failed earlier is initialized again
   * first, once per call.
   */
  async call(tool: string, args: unknown, signal: AbortSignal, retried = false): Promise<McpCallResult> {
    const remote = isRemote(this.config)
    if (remote && this.state === 'failed' && !this.closing && !retried) {
      if (!(await this.reconnect())) throw new Error(`mcp server ${this.name} is down: ${this.error}`)
    }
    const client = this.client
    if (!client || this.state !== 'ready')
      throw new Error(
        `mcp server ${this.name} ${this.state === 'closed' && this.error ? `died earlier in this session: ${this.error}` : `is not running${this.error ? `: ${this.error}` : ''}`}`,
      )
    const timeout = this.config.timeout ?? this.options.callTimeoutMs
    // A signal of its own per call: the SDK adds an abort listener per request and never removes it, so the turn's
    // signal would gain one per call (MaxListenersExceededWarning after 10). One listener here, removed after.
    const own = new AbortController()
    const forward = () => own.abort(signal.reason)
    signal.addEventListener('abort', forward, { once: true })
    if (signal.aborted) forward()
    this.calls.add(own)
    try {
      return (await client.callTool({ name: tool, arguments: (args ?? {}) as Record<string, unknown> }, undefined, {
        signal: own.signal,
        timeout,
        maxTotalTimeout: timeout,
      })) as McpCallResult
    } catch (error) {
      if (signal.aborted) throw new Error(`the call to ${this.name}/${tool} was cancelled`)
      if (own.signal.reason === DIED) {
        this.state = 'failed'
        throw new Error(`mcp server ${this.name} died during the call: ${this.error}`)
      }
      if (remote && !retried && sessionLost(error)) {
        this.state = 'failed'
        this.error = `it lost the session (${firstLine(error)})`
        if (await this.reconnect()) return this.call(tool, args, signal, true)
        throw new Error(`mcp server ${this.name} is down: ${this.error}`)
      }
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new Error(`mcp server ${this.name}: ${tool} did not answer within ${duration(timeout)}`)
      }
      if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
        throw new Error(
          `mcp server ${this.name} closed the connection during the call${this.stderr.lastLine() ? ` (stderr: ${this.stderr.lastLine()})` : ''}`,
        )
      }
      throw new Error(`mcp server ${this.name}: ${firstLine(error)}`)
    } finally {
      signal.removeEventListener('abort', forward)
      this.calls.delete(own)
    }
  }

  /** Stops the server; a stdio server's process is gone when this resolves (stop.ts). */
  async close(): Promise<void> {
    this.closing = true
    if (this.state === 'starting' || this.state === 'ready') this.state = 'closed'
    const client = this.client
    this.client = undefined
    await this.shut(client)
  }

  /**
   * Closes the SDK client; for a stdio server the SDK closes its stdin and waits for it, and stop.ts signals it
   * sooner than the SDK would. The pid is read first: the SDK forgets its process as soon as its close begins.
   */
  private async shut(client: Client | undefined): Promise<void> {
    const pid = this.stdio?.pid
    const closed = client?.close().catch(() => {}) ?? Promise.resolve()
    await (pid ? stopServer(pid, closed) : closed)
  }

  private fail(message: string): void {
    if (this.closing) return
    this.state = 'failed'
    this.error = message
  }

  private explain(error: unknown): string {
    const stderr = this.stderr.lastLine()
    const base =
      error instanceof McpError && error.code === ErrorCode.ConnectionClosed
        ? 'it exited before it answered'
        : firstLine(error)
    return stderr && !base.includes(stderr) ? `${base} (stderr: ${stderr})` : base
  }
}

/** The abort reason of a call whose server died under it. */
const DIED = Symbol('the server died')

/**
 * A remote call that failed because the server's side of the session is gone: an HTTP 404 for the session id (the
 * spec's signal to start a new session), a 400 naming the session id (what SDK servers answer after a restart), or
 * a connection that cannot be made any more.
 */
function sessionLost(error: unknown): boolean {
  const text = error instanceof Error ? `${error.message} ${String((error as { cause?: unknown }).cause ?? '')}` : ''
  const code = (error as { code?: unknown })?.code
  if (code === 404) return true
  return /session id|session not found|fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|terminated/i.test(text)
}

function duration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return (text.split('\n')[0] ?? '').replace(/^MCP error -?\d+: /, '').slice(0, 300)
}

/** The SDK's own timeout covers the initialize request; this also covers a transport that never opens. */
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not ${what} within ${duration(ms)}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
