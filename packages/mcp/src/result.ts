import type { ToolContent } from '@keel/tools'

/** The parts of an MCP `tools/call` result Keel reads; anything else in it is ignored. */
export interface McpCallResult {
  content?: McpContent[]
  structuredContent?: unknown
  isError?: boolean
  /** Very old servers answer with `toolResult` instead of `content`. */
  toolResult?: unknown
}

type McpContent =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: 'resource_link'; uri: string; name?: string; description?: string; mimeType?: string }
  | { type: string; [key: string]: unknown }

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])

/**
 * What the model sees of an MCP result: text as text, structured content as JSON text (when the server sent no text
 * for it), images as image blocks, embedded resources as text headed by their URI. Text beyond `maxChars` in all is
 * cut, with a note saying how much, so one chatty server cannot fill the context window.
 */
export function toToolContent(result: McpCallResult, maxChars: number): { content: ToolContent; isError: boolean } {
  const content: ToolContent = []
  let budget = maxChars
  let cut = 0
  const text = (value: string) => {
    if (budget <= 0) {
      cut += value.length
      return
    }
    if (value.length > budget) {
      cut += value.length - budget
      value = value.slice(0, budget)
    }
    budget -= value.length
    content.push({ type: 'text', text: value })
  }
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        text(String((block as { text: unknown }).text ?? ''))
        break
      case 'image': {
        const { data, mimeType } = block as { data: string; mimeType: string }
        if (IMAGE_TYPES.has(mimeType) && typeof data === 'string')
          content.push({ type: 'image', mediaType: mimeType, data })
        else text(`[image of type ${mimeType} omitted: not a format models read]`)
        break
      }
      case 'audio':
        text(
          `[audio (${String((block as { mimeType?: unknown }).mimeType)}) omitted: Keel does not send audio to models]`,
        )
        break
      case 'resource': {
        const resource = (block as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } })
          .resource
        if (typeof resource?.text === 'string') text(`[resource ${resource.uri}]\n${resource.text}`)
        else
          text(
            `[resource ${resource?.uri} (${resource?.mimeType ?? 'binary'}, ${resource?.blob?.length ?? 0} base64 characters) not shown]`,
          )
        break
      }
      case 'resource_link': {
        const link = block as { uri: string; name?: string; description?: string }
        text(
          `[resource link ${link.uri}${link.name ? ` "${link.name}"` : ''}${link.description ? `: ${link.description}` : ''}]`,
        )
        break
      }
      default:
        text(`[${block.type} content omitted]`)
    }
  }
  // Structured content only stands in for an empty `content`: the spec has servers repeat it there as text, and a
  // server that answers with an image and the same image in structuredContent would send its base64 twice.
  if (result.structuredContent !== undefined && !result.content?.length)
    text(JSON.stringify(result.structuredContent, null, 2))
  if (!result.content && result.toolResult !== undefined)
    text(typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult))
  if (cut)
    content.push({
      type: 'text',
      text: `\n[${cut} more characters of this result were cut: MCP results are limited to ${maxChars} characters]`,
    })
  if (!content.length) content.push({ type: 'text', text: '(the tool returned no content)' })
  return { content, isError: result.isError === true }
}
