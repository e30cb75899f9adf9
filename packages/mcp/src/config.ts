import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import Schema from 'schemastery'
import { projectRoot } from '@keel/settings'

/** A server Keel starts and talks to over its stdin and stdout. */
export interface StdioServerConfig {
  type?: 'stdio'
  command: string
  args?: string[]
  env?: Record<string, string>
  cwd?: string
  /** Milliseconds one tool call may take (default: the plugin's `callTimeoutMs`). */
  timeout?: number
}

/** A server reached over streamable HTTP (`http`, the default for a `url`) or the older SSE transport (`sse`). */
export interface RemoteServerConfig {
  type?: 'http' | 'sse'
  url: string
  headers?: Record<string, string>
  timeout?: number
}

export type ServerConfig = StdioServerConfig | RemoteServerConfig

export function isRemote(config: ServerConfig): config is RemoteServerConfig {
  return 'url' in config && typeof config.url === 'string'
}

const StringMap = Schema.dict(Schema.string())

export const ServerConfigSchema: Schema<ServerConfig> = Schema.union([
  Schema.object({
    type: Schema.const('stdio' as const),
    command: Schema.string().required(),
    args: Schema.array(Schema.string()),
    env: StringMap,
    cwd: Schema.string(),
    timeout: Schema.natural().description(
      'milliseconds one tool call of this server may take (default: callTimeoutMs)',
    ),
  }),
  Schema.object({
    type: Schema.union([Schema.const('http' as const), Schema.const('sse' as const)]),
    url: Schema.string().required(),
    headers: StringMap,
    timeout: Schema.natural().description(
      'milliseconds one tool call of this server may take (default: callTimeoutMs)',
    ),
  }),
]) as Schema<ServerConfig>

/** Server names become part of tool names (`mcp__<server>__<tool>`), so they are kept to what every provider accepts. */
export function checkServerName(name: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(name))
    return `server name ${JSON.stringify(name)} must be 1-40 letters, digits, _ or -`
  if (name.includes('__')) return `server name ${JSON.stringify(name)} must not contain "__"`
  return undefined
}

export class McpConfigError extends Error {}

/**
 * `${VAR}` and `${VAR:-default}` in `env`, `headers`, `args`, `url` and `command`, as the other agents' `.mcp.json`
 * files use them. A variable that is unset (and has no default) is an error naming it, never an empty string.
 */
export function expandEnv(config: ServerConfig, server: string, env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const expand = (text: string, where: string): string =>
    text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback?: string) => {
      const value = env[name]
      if (value !== undefined && value !== '') return value
      if (fallback !== undefined) return fallback
      throw new McpConfigError(`mcp server ${server}: ${where} uses \${${name}}, which is not set`)
    })
  const map = (record: Record<string, string> | undefined, where: string) =>
    record
      ? Object.fromEntries(Object.entries(record).map(([key, value]) => [key, expand(value, `${where}.${key}`)]))
      : undefined
  if (isRemote(config)) {
    return {
      ...config,
      url: expand(config.url, 'url'),
      ...(config.headers ? { headers: map(config.headers, 'headers') } : {}),
    }
  }
  return {
    ...config,
    command: expand(config.command, 'command'),
    ...(config.args ? { args: config.args.map((arg, i) => expand(arg, `args[${i}]`)) } : {}),
    ...(config.env ? { env: map(config.env, 'env') } : {}),
  }
}

/**
 * Reads `<project root>/.mcp.json` (`{ "mcpServers": { name: config } }`, the format Claude Code and others read).
 * Returns no servers when the file is absent or empty; a file that is not valid is an error naming it and the key.
 */
export function readProjectServers(cwd: string): { file?: string; servers: Record<string, ServerConfig> } {
  const file = join(projectRoot(cwd), '.mcp.json')
  let text: string
  try {
    // A FIFO (or a link to a device) named .mcp.json would block the read, and with it every start in the project.
    if (!statSync(file).isFile()) throw new McpConfigError(`${file}: not a file`)
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if (error instanceof McpConfigError) throw error
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { servers: {} }
    throw new McpConfigError(`${file}: ${(error as Error).message}`)
  }
  // The sandbox keeps an empty file where a missing .mcp.json is while a command runs (its mount point): no servers.
  if (text === '') return { servers: {} }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    throw new McpConfigError(`${file}: not valid JSON (${(error as Error).message})`)
  }
  const servers = (parsed as { mcpServers?: unknown } | null)?.mcpServers
  if (servers === undefined) return { file, servers: {} }
  return { file, servers: validateServers(servers, `${file}: mcpServers`) }
}

/** Validates a `mcpServers` map; errors name the server and the key. */
export function validateServers(servers: unknown, where: string): Record<string, ServerConfig> {
  if (!servers || typeof servers !== 'object' || Array.isArray(servers))
    throw new McpConfigError(`${where} must be an object of servers`)
  const out: Record<string, ServerConfig> = {}
  for (const [name, raw] of Object.entries(servers)) {
    const badName = checkServerName(name)
    if (badName) throw new McpConfigError(`${where}: ${badName}`)
    if (!raw || typeof raw !== 'object')
      throw new McpConfigError(`${where}.${name} must be an object with "command" or "url"`)
    const hasUrl = typeof (raw as { url?: unknown }).url === 'string'
    const hasCommand = typeof (raw as { command?: unknown }).command === 'string'
    if (!hasUrl && !hasCommand) throw new McpConfigError(`${where}.${name} needs "command" (stdio) or "url" (http)`)
    try {
      out[name] = ServerConfigSchema(raw as ServerConfig)
    } catch (error) {
      throw new McpConfigError(`${where}.${name}: ${(error as Error).message}`)
    }
  }
  return out
}
