import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js'
import { isRemote, type ServerConfig } from './config.ts'
import type { McpCallResult } from './result.ts'

export type ServerState = 'starting' | 'ready' | 'failed' | 'closed'
export type TransportKind = 'stdio' | 'http' | 'sse'

export interface ConnectionOptions {
  startTimeoutMs: number
  callTimeoutMs: number
  clientVersion: string
  /** Working directory for a stdio server without its own `cwd`. */
  cwd: string
  /** The server's tool list changed (a `tools/list_changed` notification was handled). */
  onTools(tools: Tool[]): void
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
      if (this.closing) return
      this.state = 'ready'
    } catch (error) {
      this.fail(this.explain(error))
      await this.client?.close().catch(() => {})
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
        capabilities: {},
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (error || !tools || this.state !== 'ready') return
              this.tools = tools
              this.options.onTools(tools)
            },
          },
        },
      },
    )
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
      await client.close().catch(() => {})
      throw error
    }
  }

  private async listTools(): Promise<Tool[]> {
    const tools: Tool[] = []
    let cursor: string | undefined
    // Bounded: a server that pages forever cannot hang the start.
    for (let page = 0; page < 100; page++) {
      const result = await this.client!.listTools(cursor ? { cursor } : undefined, {
        timeout: this.options.startTimeoutMs,
      })
      tools.push(...result.tools)
      cursor = result.nextCursor
      if (!cursor) break
    }
    return tools
  }

  /** The stdio server's process id while it runs. */
  get pid(): number | undefined {
    return this.stdio?.pid ?? undefined
  }

  /** Calls a tool; rejects with a one-line message on timeout, on a closed connection or when cancelled. */
  async call(tool: string, args: unknown, signal: AbortSignal): Promise<McpCallResult> {
    const client = this.client
    if (!client || this.state !== 'ready')
      throw new Error(`mcp server ${this.name} is not running${this.error ? `: ${this.error}` : ''}`)
    const timeout = this.config.timeout ?? this.options.callTimeoutMs
    try {
      return (await client.callTool({ name: tool, arguments: (args ?? {}) as Record<string, unknown> }, undefined, {
        signal,
        timeout,
        maxTotalTimeout: timeout,
      })) as McpCallResult
    } catch (error) {
      if (signal.aborted) throw new Error(`the call to ${this.name}/${tool} was cancelled`)
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new Error(`mcp server ${this.name}: ${tool} did not answer within ${duration(timeout)}`)
      }
      if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
        throw new Error(
          `mcp server ${this.name} closed the connection during the call${this.stderr.lastLine() ? ` (stderr: ${this.stderr.lastLine()})` : ''}`,
        )
      }
      throw new Error(`mcp server ${this.name}: ${firstLine(error)}`)
    }
  }

  /** Stops the server (a stdio server's process is ended by the SDK: stdin closed, then SIGTERM, then SIGKILL). */
  async close(): Promise<void> {
    this.closing = true
    if (this.state === 'starting' || this.state === 'ready') this.state = 'closed'
    const client = this.client
    this.client = undefined
    await client?.close().catch(() => {})
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
