import { type Tool, ToolSchema } from '@modelcontextprotocol/sdk/types.js'

// What one server may make every model request carry. Its tool list goes out with each request, so 5,000 tools or a
// 40,000-property schema made every request megabytes, and a 5,000-deep schema made every request of the session
// fail (the adapters' JSON handling ran out of stack). A tool past a cap is dropped with a warning naming it; one bad
// tool never fails the whole server.

/** Tools kept per server (OpenAI accepts at most 128 tools in a request, Keel's own included). */
export const MAX_TOOLS = 100
/** One tool's input schema, as JSON. */
const MAX_SCHEMA_BYTES = 64 * 1024
/** Nesting of objects and arrays in one schema. */
const MAX_SCHEMA_DEPTH = 64
/** All of one server's schemas together, as JSON. */
const MAX_SERVER_SCHEMA_BYTES = 256 * 1024

/** How deep `value` nests, counted without recursion (a deep value must not exhaust the stack); stops past `limit`. */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length) {
    const [node, depth] = stack.pop()!
    if (!node || typeof node !== 'object') continue
    if (depth > deepest) deepest = depth
    if (deepest > limit) return deepest
    for (const child of Object.values(node)) if (child && typeof child === 'object') stack.push([child, depth + 1])
  }
  return deepest
}

export interface Screened {
  tools: Tool[]
  /** One phrase per dropped tool or group of tools, naming them and why. */
  dropped: string[]
}

function nameOf(raw: unknown): string {
  const name = (raw as { name?: unknown })?.name
  return typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : '(unnamed)'
}

/** The tools of one `tools/list` answer that a request may carry, and what was dropped. */
export function screenTools(raw: readonly unknown[]): Screened {
  const tools: Tool[] = []
  const dropped: string[] = []
  let total = 0
  const over: string[] = []
  for (const candidate of raw) {
    const name = nameOf(candidate)
    const schema = (candidate as { inputSchema?: unknown })?.inputSchema
    const depth = depthOf(schema, MAX_SCHEMA_DEPTH)
    if (depth > MAX_SCHEMA_DEPTH) {
      dropped.push(`${name} (its input schema nests deeper than ${MAX_SCHEMA_DEPTH} levels)`)
      continue
    }
    const parsed = ToolSchema.safeParse(candidate)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      dropped.push(
        `${name} (not a valid tool: ${issue ? `${issue.path.join('.') || 'tool'} ${issue.message}` : 'invalid'})`,
      )
      continue
    }
    const bytes = JSON.stringify(parsed.data.inputSchema ?? {}).length
    if (bytes > MAX_SCHEMA_BYTES) {
      dropped.push(
        `${name} (its input schema is ${Math.round(bytes / 1024)} KB; the limit is ${MAX_SCHEMA_BYTES / 1024} KB)`,
      )
      continue
    }
    if (tools.length >= MAX_TOOLS || total + bytes > MAX_SERVER_SCHEMA_BYTES) {
      over.push(name)
      continue
    }
    total += bytes
    tools.push(parsed.data)
  }
  if (over.length)
    dropped.push(
      `${over.length} more tool${over.length === 1 ? '' : 's'} past the limit of ${MAX_TOOLS} tools or ${MAX_SERVER_SCHEMA_BYTES / 1024} KB of schemas per server (${over.slice(0, 5).join(', ')}${over.length > 5 ? ', …' : ''})`,
    )
  return { tools, dropped }
}
