import type { ContentBlock, ImageBlock, Message, Session, TextBlock } from '@keel/session'
import { TRIM_NOTE_CHARS } from './trim.ts'

/** Roughly what providers charge for one image; base64 length says nothing useful about it. */
const IMAGE_TOKENS = 1_000
const CHARS_PER_TOKEN = 4

// Messages on the surface are frozen and reused across calls, so their size is computed once.
const sizes = new WeakMap<object, number>()

function blockChars(block: ContentBlock): number {
  switch (block.type) {
    case 'text':
    case 'reasoning':
      return block.text.length
    case 'image':
      return IMAGE_TOKENS * CHARS_PER_TOKEN
    case 'tool-call':
      return block.name.length + block.arguments.length
    case 'tool-result': {
      let chars = 0
      for (const inner of block.content) chars += blockChars(inner)
      return chars
    }
    default:
      return 0
  }
}

export function messageChars(message: Message): number {
  let chars = sizes.get(message)
  if (chars === undefined) {
    chars = 0
    for (const block of message.content) chars += blockChars(block)
    sizes.set(message, chars)
  }
  return chars
}

/** A tool result's size as the model is sent it: a trimmed one counts its kept text and the note. */
function resultChars(
  callId: string,
  content: readonly (TextBlock | ImageBlock)[],
  trims: ReadonlyMap<string, number>,
): number {
  let text = 0
  let other = 0
  for (const block of content) {
    if (block.type === 'text') text += block.text.length
    else other += blockChars(block)
  }
  const kept = trims.get(callId)
  return (kept !== undefined && kept < text ? kept + TRIM_NOTE_CHARS : text) + other
}

/** `messageChars`, with trimmed tool results counted as sent. */
function sentChars(message: Message, trims: ReadonlyMap<string, number>): number {
  if (message.role !== 'tool' || !trims.size) return messageChars(message)
  let chars = 0
  for (const block of message.content) chars += resultChars(block.toolCallId, block.content, trims)
  return chars
}

export function charsToTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN)
}

export interface ContextEstimate {
  tokens: number
  /** `usage`: anchored on the provider's count for the last request; `chars`: chars/4 over everything. */
  basis: 'usage' | 'chars'
}

/**
 * The size of the next request, in tokens. When the last model reply since the latest compaction reported usage,
 * its `usage.input` (the whole prompt of that request, system and tools included) is the anchor and only what was
 * appended after that request is estimated, at 4 characters per token. Otherwise everything — system prompt, tool
 * schemas (`overheadChars`) and every surface message — is estimated that way. A replace invalidates the anchor,
 * because the provider's count described a history that no longer exists. Trimmed tool results (`trims`, see
 * trim.ts) count as they are sent. `overheadChars` may be a function: it runs only when no usage anchors the
 * estimate (serialising the tool schemas costs more than the rest of an anchored estimate, on every request).
 */
export function estimateContext(
  session: Session,
  overheadChars: number | (() => number),
  trims: ReadonlyMap<string, number> = new Map(),
): ContextEstimate {
  let since = 0
  // Read in place, newest first: `session.events` copies the whole log after every append.
  for (let i = session.seq - 1; i >= 0; i--) {
    const event = session.at(i)!
    if (!('surfaceOp' in event)) continue
    if (event.surfaceOp.op === 'replace') break
    if (event.type === 'assistant/message') {
      since += messageChars(event.data.message)
      if (event.data.usage) return { tokens: event.data.usage.input + charsToTokens(since), basis: 'usage' }
    } else if (event.type === 'user/message') {
      since += messageChars(event.data.message)
    } else if (event.type === 'tool/result') {
      since += resultChars(event.data.callId, event.data.content, trims)
    }
  }
  let chars = typeof overheadChars === 'number' ? overheadChars : overheadChars()
  for (const message of session.deriveMessages()) chars += sentChars(message, trims)
  return { tokens: charsToTokens(chars), basis: 'chars' }
}
