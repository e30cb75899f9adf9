// The chat-completions wire shapes Keel sends and reads, as OpenAI documents them; compatible servers add fields
// (DeepSeek's `reasoning_content` and `prompt_cache_hit_tokens`, Ollama's and vLLM's `reasoning`). Only what the
// adapter touches is typed; a server's extra fields pass through unread.

/** `cache_control` is OpenRouter's, passed on to Anthropic (chat-cache.ts); OpenAI itself takes none. */
export type TextPart = { type: 'text'; text: string; cache_control?: { type: 'ephemeral'; ttl?: '1h' } }
export type UserPart = TextPart | { type: 'image_url'; image_url: { url: string } }

export interface ChatToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export type ChatMessage =
  | { role: 'system'; content: string | TextPart[] }
  | { role: 'user'; content: string | UserPart[] }
  | {
      role: 'assistant'
      content: string | null
      tool_calls?: ChatToolCall[]
      /** DeepSeek and "interleaved thinking" servers: the reasoning that led to this message. */
      reasoning_content?: string
      /** OpenRouter: the reasoning as it streamed it, sent back unchanged. */
      reasoning_details?: unknown[]
    }
  | { role: 'tool'; tool_call_id: string; content: string | TextPart[] }

export interface ChatRequest {
  model: string
  messages: ChatMessage[]
  stream: true
  stream_options: { include_usage: boolean }
  tools?: { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[]
  max_tokens?: number
  max_completion_tokens?: number
  /** DeepSeek, GLM: thinking mode on or off (on by default on DeepSeek V4). */
  thinking?: { type: 'enabled' | 'disabled' }
  reasoning_effort?: string
  /** OpenRouter's unified reasoning control. */
  reasoning?: { effort?: string; max_tokens?: number; enabled?: boolean }
}

export interface ChatToolCallDelta {
  index?: number
  id?: string
  function?: { name?: string; arguments?: string }
}

export interface ChatUsage {
  prompt_tokens?: number
  completion_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number }
  completion_tokens_details?: { reasoning_tokens?: number }
  prompt_cache_hit_tokens?: number
}

export interface ChatChunk {
  choices?: {
    index?: number
    delta?: {
      content?: string | null
      reasoning_content?: string | null
      reasoning?: string | null
      /** OpenRouter: typed reasoning pieces (`reasoning.text` with a signature, `reasoning.encrypted`, …). */
      reasoning_details?: ReasoningDetail[]
      tool_calls?: ChatToolCallDelta[]
    }
    finish_reason?: string | null
  }[]
  usage?: ChatUsage | null
  /** Sent inside a 200 stream when the server fails mid-generation. */
  error?: unknown
}

export interface ReasoningDetail {
  type?: string
  index?: number
  text?: string
  summary?: string
  [key: string]: unknown
}
