import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import { defineTool, type ToolDefinition } from '@keel/tools'
import type { TSchema } from 'typebox'
import type { Connection } from './connection.ts'
import { toToolContent } from './result.ts'

/** Providers accept tool names of at most 64 characters of `[A-Za-z0-9_-]`. */
const MAX_NAME = 64
const MAX_DESCRIPTION = 2000

/** `mcp__<server>__<tool>`, with the tool's name made safe for every provider. */
export function toolName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, MAX_NAME)
}

export interface McpToolOptions {
  maxResultChars: number
}

/** One MCP tool as a Keel tool: the server's JSON Schema is sent to the model unchanged. */
export function mcpTool(connection: Connection, tool: Tool, exposed: string, options: McpToolOptions): ToolDefinition {
  const schema = { ...(tool.inputSchema ?? {}), type: 'object' } as unknown as TSchema
  const description = (tool.description?.trim() || tool.title || tool.name).slice(0, MAX_DESCRIPTION)
  return defineTool({
    name: exposed,
    description: `[MCP server ${connection.name}] ${description}`,
    parameters: schema,
    presentCall: (args) => ({
      title: `${connection.name} › ${tool.name} ${briefArgs(args)}`.trim(),
      kind: 'other',
      rawInput: args,
    }),
    // The server's read-only hint rides along for plan mode to honour; no other mode trusts it.
    access: tool.annotations?.readOnlyHint === true ? () => ({ kind: 'other', declaredReadOnly: true }) : undefined,
    async execute(args, exec) {
      const result = await connection.call(tool.name, args, exec.signal)
      return toToolContent(result, options.maxResultChars)
    },
  })
}

/** A short one-line view of the arguments for tool rows; the full arguments stay in `rawInput`. */
function briefArgs(args: unknown): string {
  if (!args || typeof args !== 'object') return ''
  const text = JSON.stringify(args)
  if (text === '{}') return ''
  return text.length > 80 ? `${text.slice(0, 79)}…` : text
}
