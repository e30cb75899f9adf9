import type { Context } from 'cordis'
import type { McpService, ServerStatus } from '@keel/mcp'
import { escapeLine } from '@keel/session'
import type { Flags } from './args.ts'
import { workingDirectory } from './args.ts'

/** `ctx.mcp` when the composition loads `@keel/mcp` (a `--config` composition may leave it out). */
export function mcpOf(ctx: Context): McpService | undefined {
  return ctx.get('mcp')
}

/** `keel mcp list`: starts the configured servers, then prints each one's state, where it came from, and its tools. */
export async function listMcp(ctx: Context, flags: Flags): Promise<string> {
  const mcp = mcpOf(ctx)
  if (!mcp) return flags.json ? '[]' : 'MCP is not part of this composition (@keel/mcp is not loaded).'
  await mcp.ready(workingDirectory(flags))
  const servers = mcp.status()
  if (flags.json)
    return JSON.stringify(
      servers.map(({ pid: _pid, ...server }) => server),
      null,
      2,
    )
  if (!servers.length) return 'No MCP servers configured. Add them to .mcp.json or to mcpServers in a settings file.'
  return servers.map(describe).join('\n')
}

function describe(server: ServerStatus): string {
  const head = `${server.name}  ${server.state}  ${server.transport}  ${escapeLine(server.source)}`
  const lines = [head]
  if (server.error) lines.push(`  ${escapeLine(server.error)}`)
  for (const tool of server.tools) lines.push(`  ${tool}`)
  if (server.state === 'ready' && !server.tools.length) lines.push('  (no tools)')
  return lines.join('\n')
}
