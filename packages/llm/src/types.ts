// Messages and token usage are the session log's shapes: @keel/session owns them and this package imports them as
// types only, from the subpath that holds nothing else, so loading an adapter never loads the session store.
import type { AssistantMessage, Message, TokenUsage } from '@keel/session/messages'
import type { ModelPrice } from '@keel/session/cost'

/** What a model is told about one tool: exactly these three fields. */
export interface ToolSchema {
  name: string
  description: string
  parameters: object
}

export interface LlmRequest {
  system: string
  messages: Message[]
  tools: ToolSchema[]
  maxTokens?: number
  /** Lets routing adapters (scripted) tell sessions apart; real providers ignore it. */
  sessionId?: string
}

export type FinishReason = 'stop' | 'tool-calls' | 'max-tokens'

/** The streamed vocabulary every adapter speaks. Tool arguments stay raw JSON text. */
export type StreamChunk =
  | { type: 'text-delta'; text: string }
  | {
      type: 'reasoning-delta'
      text: string
      signature?: string
      /** Opaque payload to keep on the block (see ReasoningBlock.data); replaces what the block held. */
      data?: string
      origin?: string
      /** Begins a new reasoning block even right after another (Anthropic sends each with its own signature). */
      start?: boolean
    }
  | { type: 'tool-call-start'; index: number; id: string; name: string }
  | { type: 'tool-call-delta'; index: number; argumentsDelta: string }
  | { type: 'usage'; usage: TokenUsage }
  | { type: 'finish'; reason: FinishReason }

export interface LlmAdapter {
  readonly provider: string
  readonly model: string
  /** Tokens the model accepts in one request, when known. */
  readonly contextWindow?: number
  /** Dollars per million tokens (catalog.ts), when known: the agent prices each reply with it. */
  readonly price?: ModelPrice
  /** False for a model that takes no images: limits.ts puts a one-line note in their place. */
  readonly vision?: boolean
  stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk>
}

/** Effort levels across providers; each maps the ones it has (DeepSeek: low, high, max; OpenAI: none…xhigh). */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number]

/** How a model thinks: per model in settings (`models`), `--effort` on the command line. */
export interface ReasoningSettings {
  /** `on`, `off`, or a budget in tokens where the provider takes one (Anthropic, OpenRouter); unset: its default. */
  thinking?: 'on' | 'off' | number
  /** The provider's effort level (`low`, `medium`, `high`, `xhigh`, `max`; each provider maps or rejects its own). */
  reasoningEffort?: ReasoningEffort
  /** Chat completions: send `reasoning_content` back on assistant messages (default on; off for a server that rejects it). */
  sendReasoning?: boolean
  /** `openai` only: `chat` speaks chat completions instead of the Responses API. */
  api?: 'responses' | 'chat'
}

export interface ProviderOptions {
  reasoning?: ReasoningSettings
  baseUrl?: string
  cwd: string
  env: Record<string, string | undefined>
  /** Longest silence of a streamed request (no headers, then no event) before it counts as dropped. */
  idleTimeoutMs?: number
  /** The settings' `models` overrides of the catalog (catalog.ts). */
  models?: import('./catalog.ts').ModelOverrides
  /** Anthropic prompt-cache lifetime (anthropic-cache.ts). */
  promptCacheTtl?: import('./anthropic-cache.ts').CacheTtl
  /** Extra request headers from the settings' `providers.<name>.headers`, `${VAR}`s already replaced. */
  headers?: Record<string, string>
  /** A one-line notice for the person, said once per key (the llm plugin emits it as a `keel/notice`). */
  tell?: import('./left-out.ts').Tell
}

export type ProviderFactory = (model: string, options: ProviderOptions) => LlmAdapter | Promise<LlmAdapter>

/** Where providers are registered (`ctx.llm`); typed here so the provider modules never import the service. */
export interface ProviderRegistry {
  register(provider: string, factory: ProviderFactory): () => void
}

export type LlmErrorKind = 'auth' | 'rate-limit' | 'server' | 'network' | 'bad-request' | 'aborted' | 'config'

export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly status?: number,
    /** How long the server asked to wait before the next attempt (retry-after and kin), when it said. */
    readonly retryAfterMs?: number,
  ) {
    super(message)
    this.name = 'LlmError'
  }

  get retryable(): boolean {
    return this.kind === 'rate-limit' || this.kind === 'server' || this.kind === 'network'
  }
}

/** Folds a chunk stream into one assistant message, in the order blocks began. */
export class MessageAssembler {
  private readonly blocks: (
    | { type: 'text'; text: string }
    | { type: 'reasoning'; text: string; signature?: string; data?: string; origin?: string }
    | { type: 'tool-call'; index: number; id: string; name: string; arguments: string }
  )[] = []
  usage: TokenUsage | undefined
  finish: FinishReason | undefined

  push(chunk: StreamChunk): void {
    const last = this.blocks[this.blocks.length - 1]
    switch (chunk.type) {
      case 'text-delta':
        if (last?.type === 'text') last.text += chunk.text
        else this.blocks.push({ type: 'text', text: chunk.text })
        break
      case 'reasoning-delta': {
        let block = last
        if (block?.type !== 'reasoning' || chunk.start) {
          block = { type: 'reasoning', text: '' }
          this.blocks.push(block)
        }
        block.text += chunk.text
        if (chunk.signature) block.signature = chunk.signature
        if (chunk.data !== undefined) block.data = chunk.data
        if (chunk.origin) block.origin = chunk.origin
        break
      }
      case 'tool-call-start':
        this.blocks.push({ type: 'tool-call', index: chunk.index, id: chunk.id, name: chunk.name, arguments: '' })
        break
      case 'tool-call-delta': {
        const call = this.blocks.findLast((block) => block.type === 'tool-call' && block.index === chunk.index)
        if (call && call.type === 'tool-call') call.arguments += chunk.argumentsDelta
        break
      }
      case 'usage':
        this.usage = chunk.usage
        break
      case 'finish':
        this.finish = chunk.reason
        break
    }
  }

  /** True once any visible output (text or a tool call) has arrived; retries stop being safe then. */
  get started(): boolean {
    return this.blocks.length > 0
  }

  message(): AssistantMessage {
    return {
      role: 'assistant',
      content: this.blocks
        .filter((block) => block.type !== 'text' || block.text.length > 0)
        .map((block) =>
          block.type === 'tool-call'
            ? { type: 'tool-call', id: block.id, name: block.name, arguments: block.arguments }
            : { ...block },
        ),
    }
  }
}
