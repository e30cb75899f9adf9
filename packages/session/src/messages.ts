// Provider-neutral conversation types. They live here (not in @keel/llm) because the session log stores
// whole messages and @keel/session imports nothing of ours; @keel/llm re-exports them.

export interface TextBlock {
  type: 'text'
  text: string
}
/** Model reasoning ("thinking"). Kept on the log for UIs; adapters decide whether a provider gets it back. */
export interface ReasoningBlock {
  type: 'reasoning'
  text: string
  signature?: string
  /**
   * What the provider wants back unchanged and nobody reads: Anthropic's `redacted_thinking` data, OpenAI Responses'
   * `encrypted_content`, OpenRouter's `reasoning_details` (JSON text).
   */
  data?: string
  /** The wire format that produced it (`anthropic`, `responses`, `openrouter`); absent on older logs and chat completions. */
  origin?: string
}
export interface ImageBlock {
  type: 'image'
  mediaType: string
  /** Base64 of the image's bytes. */
  data: string
  /** What the person called it (`shot.png`), for the doors; adapters never send it. */
  name?: string
}
/** `arguments` is the raw JSON text exactly as the model produced it. */
export interface ToolCallBlock {
  type: 'tool-call'
  id: string
  name: string
  arguments: string
}
export interface ToolResultBlock {
  type: 'tool-result'
  toolCallId: string
  content: (TextBlock | ImageBlock)[]
  isError: boolean
}

/** Merge-extensible: `declare module '@keel/session' { interface ContentBlockMap { … } }`. */
export interface ContentBlockMap {
  text: TextBlock
  reasoning: ReasoningBlock
  image: ImageBlock
  'tool-call': ToolCallBlock
  'tool-result': ToolResultBlock
}
export type ContentBlock = ContentBlockMap[keyof ContentBlockMap]

/**
 * Where a user-role message came from: the person (a prompt; `steer`: a message they sent while the turn ran,
 * delivered before its next model request; `shell`: a command they ran with `!` in the TUI and its output), or the
 * harness (compaction summaries, context blocks; `plan`: @keel/todo's notes about the plan and plan mode, and the
 * prompt a person's answer to a proposal opens a turn with).
 */
export type MessageSource = 'user' | 'steer' | 'shell' | 'compaction' | 'context' | 'plan'

export interface UserMessage {
  role: 'user'
  content: ContentBlock[]
  source?: MessageSource
  /** The slash command (`frontend:review`) this prompt was expanded from (@keel/extend); the text is the expansion. */
  command?: string
}
export interface AssistantMessage {
  role: 'assistant'
  content: ContentBlock[]
}
export interface ToolMessage {
  role: 'tool'
  content: ToolResultBlock[]
}
export type Message = UserMessage | AssistantMessage | ToolMessage

/**
 * Tokens one request was billed for, as the provider reported them. `input` is the whole prompt (what the context
 * holds); `cacheRead` and `cacheWrite` are the parts of it read from and written to the provider's prompt cache
 * (priced apart); `reasoning` is the part of `output` the model spent thinking.
 */
export interface TokenUsage {
  input: number
  output: number
  cacheRead?: number
  cacheWrite?: number
  reasoning?: number
}

export function textOf(blocks: readonly ContentBlock[]): string {
  let out = ''
  for (const block of blocks) if (block.type === 'text') out += block.text
  return out
}

export function toolCallsOf(message: AssistantMessage): ToolCallBlock[] {
  return message.content.filter((block): block is ToolCallBlock => block.type === 'tool-call')
}
