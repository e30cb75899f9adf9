import type { Context } from 'cordis'
import Schema from 'schemastery'
import { ServerConfigSchema } from './config.ts'
import { McpService, type McpConfig } from './service.ts'

export * from './config.ts'
export { McpService, type McpConfig, type ServerStatus } from './service.ts'
export { toToolContent, type McpCallResult } from './result.ts'
export { toolName } from './tools.ts'

export const name = 'keel-mcp'
export const inject = ['tools']

export interface Config extends McpConfig {}

export const Config: Schema<Config> = Schema.object({
  servers: Schema.dict(ServerConfigSchema)
    .default({})
    .description(
      'MCP servers by name: { command, args, env, cwd } for stdio, { url, headers, type } for streamable HTTP or SSE.',
    ),
  projectFile: Schema.boolean()
    .default(true)
    .description("Also read the project's .mcp.json (mcpServers), as other agents do."),
  startTimeoutMs: Schema.natural()
    .min(1)
    .default(30_000)
    .description('Milliseconds a server may take to start and list its tools.'),
  callTimeoutMs: Schema.natural()
    .min(1)
    .default(120_000)
    .description("Milliseconds one tool call may take (a server's own `timeout` overrides it)."),
  maxResultChars: Schema.natural()
    .min(100)
    .default(25_000)
    .description('Characters of one tool result the model is sent; the rest is cut with a note.'),
})

/** `ctx.mcp`. Disposing the plugin stops every server and removes their tools. */
export function apply(ctx: Context, config: Config): void {
  ctx.plugin(McpService, config)
}
