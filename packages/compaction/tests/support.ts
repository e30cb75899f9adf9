import type { LlmRequest } from '@keel/llm'

/** What a request costs by the chars/4 rule: system prompt, tool schemas and every message (an image as 4000 chars). */
export function requestTokens(request: LlmRequest): number {
  let chars = request.system.length + JSON.stringify(request.tools).length
  for (const message of request.messages) {
    for (const block of message.content) {
      if (block.type === 'text' || block.type === 'reasoning') chars += block.text.length
      else if (block.type === 'tool-call') chars += block.name.length + block.arguments.length
      else if (block.type === 'tool-result')
        for (const inner of block.content) chars += inner.type === 'text' ? inner.text.length : 4000
    }
  }
  return Math.ceil(chars / 4)
}
