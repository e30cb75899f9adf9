import type { McpServer } from '@agentclientprotocol/sdk'
import type { ServerConfig } from '@keel/mcp'

/**
 * The `mcpServers` of `session/new` / `session/load` in Keel's server configuration. ACP sends env and headers as
 * name/value lists and allows any server name; names are made safe for tool names (`mcp__<server>__<tool>`).
 */
export function acpServers(servers: readonly McpServer[]): Record<string, ServerConfig> {
  const out: Record<string, ServerConfig> = {}
  for (const server of servers) {
    const name =
      server.name
        .replace(/[^A-Za-z0-9_-]+/g, '_')
        .replace(/_{2,}/g, '_')
        .slice(0, 40) || 'server'
    const pairs = (list: readonly { name: string; value: string }[]) =>
      Object.fromEntries(list.map(({ name, value }) => [name, value]))
    out[name] =
      'command' in server
        ? { command: server.command, args: [...server.args], env: pairs(server.env) }
        : { type: server.type, url: server.url, headers: pairs(server.headers) }
  }
  return out
}
