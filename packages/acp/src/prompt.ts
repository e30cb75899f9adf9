import { fileURLToPath } from 'node:url'
import type { ContentBlock } from '@agentclientprotocol/sdk'
import { imageFromBase64 } from '@keel/session/image'
import type { ImageBlock, TextBlock } from '@keel/session'

/**
 * What `initialize` promises and `session/prompt` accepts: the ACP baseline (text and resource links) and images
 * (https://agentclientprotocol.com/protocol/content#image-content: base64 `data` and its `mimeType`), which the
 * agent sends only to a model with vision.
 */
export const PROMPT_CAPABILITIES = { image: true, audio: false, embeddedContext: false } as const

/** A link as the model reads it: a local file by its path, anything else by its URI. */
function linkText(uri: string, name: string, title?: string | null): string {
  let target = uri
  let kind = 'resource'
  if (uri.startsWith('file:')) {
    try {
      target = fileURLToPath(uri)
      kind = 'file'
    } catch {}
  }
  const label = title || name
  const named = label && !target.endsWith(label) ? ` (${label})` : ''
  return `[Referenced ${kind}: ${target}${named}]`
}

/**
 * The blocks of one ACP prompt as the content of one Keel user message, in order. A block kind the agent did not
 * advertise is refused with a reason rather than silently dropped.
 */
export function promptContent(
  prompt: readonly ContentBlock[],
): { content: (TextBlock | ImageBlock)[] } | { error: string } {
  const content: (TextBlock | ImageBlock)[] = []
  for (const [i, block] of prompt.entries()) {
    if (block.type === 'text') {
      if (block.text) content.push({ type: 'text', text: block.text })
    } else if (block.type === 'resource_link') {
      content.push({ type: 'text', text: linkText(block.uri, block.name, block.title) })
    } else if (block.type === 'image') {
      // Checked by its bytes, not by the mimeType the client claims.
      const name = block.uri ? (block.uri.split('/').pop() ?? '') : ''
      const image = imageFromBase64(name || 'the image', block.data)
      if ('error' in image) return { error: `prompt[${i}]: ${image.error}` }
      content.push(name ? image : { type: 'image', mediaType: image.mediaType, data: image.data })
    } else {
      return {
        error: `prompt[${i}]: ${block.type} content is not accepted; send text, resource_link and image blocks (see promptCapabilities)`,
      }
    }
  }
  if (!content.some((block) => block.type === 'image' || block.text.trim())) return { error: 'the prompt is empty' }
  return { content }
}
