import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { DEFAULT_IDLE_TIMEOUT_MS } from './idle.ts'
import { reasoningFor, registerProviders, splitSpec } from './providers.ts'
import { type RetryPolicy, withRetries } from './retries.ts'
import { loadScript, ScriptedAdapter } from './scripted.ts'
import {
  LlmError,
  type LlmAdapter,
  type ProviderFactory,
  type ProviderOptions,
  REASONING_EFFORTS,
  type ReasoningSettings,
} from './types.ts'

export * from './types.ts'
export * from './scripted.ts'
export { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch } from './idle.ts'
export { type RetryPolicy, withRetries } from './retries.ts'
export { CURRENT_MODELS, PROVIDER_NAMES } from './providers.ts'

declare module 'cordis' {
  interface Context {
    llm: LlmService
  }
}

export interface LlmServiceOptions extends RetryPolicy {
  idleTimeoutMs?: number
  /** `provider/model` → how it thinks (settings `llm.models`). */
  models?: Record<string, ReasoningSettings>
}

/**
 * `ctx.llm`: providers by name, and `create('provider/model')` → an adapter wrapped with bounded retries for
 * rate limits, server errors and dropped connections (only before any output arrived, so nothing is duplicated).
 */
export class LlmService extends Service {
  private readonly providers = new Map<string, ProviderFactory>()
  readonly retry: RetryPolicy
  readonly idleTimeoutMs: number
  readonly models: Record<string, ReasoningSettings>

  constructor(ctx: Context, options: LlmServiceOptions = { attempts: 3, baseDelayMs: 500 }) {
    super(ctx, 'llm', true)
    this.retry = { attempts: options.attempts, baseDelayMs: options.baseDelayMs }
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
    this.models = options.models ?? {}
    this.providers.set('scripted', (model, options) => {
      const script = loadScript(model, options.cwd)
      const window = script.contextWindow
      return new ScriptedAdapter(script, model, typeof window === 'number' && window > 0 ? window : undefined)
    })
  }

  register(provider: string, factory: ProviderFactory): () => void {
    return this.ctx.effect(() => {
      this.providers.set(provider, factory)
      return () => this.providers.delete(provider)
    })
  }

  providerNames(): string[] {
    return [...this.providers.keys()]
  }

  async create(spec: string, options: Partial<ProviderOptions> = {}): Promise<LlmAdapter> {
    const split = splitSpec(spec)
    if (!split) throw new LlmError('config', `--model must be <provider>/<model>, got ${JSON.stringify(spec)}`)
    const { provider, model } = split
    const factory = this.providers.get(provider)
    if (!factory)
      throw new LlmError(
        'config',
        `unknown provider ${JSON.stringify(provider)}; known: ${this.providerNames().join(', ')}`,
      )
    const adapter = await factory(model, {
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? process.env,
      baseUrl: options.baseUrl,
      idleTimeoutMs: options.idleTimeoutMs ?? this.idleTimeoutMs,
      reasoning: reasoningFor(this.models, spec, options.reasoning),
    })
    return withRetries(adapter, this.retry)
  }
}

export const name = 'keel-llm'
export interface Config {
  retryAttempts: number
  retryBaseDelayMs: number
  idleTimeoutMs?: number
  models?: Record<string, ReasoningSettings>
}

const ReasoningSchema: Schema<ReasoningSettings> = Schema.object({
  thinking: Schema.union([
    Schema.const('on' as const),
    Schema.const('off' as const),
    Schema.natural().min(1024),
  ]).description('on, off, or a budget in tokens (Anthropic, OpenRouter; at least 1024).'),
  reasoningEffort: Schema.union(REASONING_EFFORTS).description(
    "The provider's effort level; each provider maps the ones it has (DeepSeek: low, high, max).",
  ),
  sendReasoning: Schema.boolean().description(
    'Chat completions: send reasoning_content back on assistant messages (default on; off for a server that rejects it).',
  ),
  api: Schema.union(['responses', 'chat'] as const).description(
    'openai only: chat speaks chat completions instead of the Responses API.',
  ),
})

export const Config: Schema<Config> = Schema.object({
  retryAttempts: Schema.natural()
    .min(1)
    .default(3)
    .description('Attempts for a request that fails with 429, 5xx, a dropped connection or a stall.'),
  retryBaseDelayMs: Schema.natural().default(500).description('First backoff delay; doubles each retry.'),
  idleTimeoutMs: Schema.natural()
    .min(1)
    .default(DEFAULT_IDLE_TIMEOUT_MS)
    .description(
      'Longest silence of a streamed reply (no response headers, then no stream event) before it counts as a dropped connection.',
    ),
  models: Schema.dict(ReasoningSchema).description(
    'Per model, by <provider>/<model>: thinking (on, off, a budget), reasoningEffort, sendReasoning, api.',
  ),
})

export function apply(ctx: Context, config: Config): void {
  ctx.plugin(LlmService, {
    attempts: config.retryAttempts,
    baseDelayMs: config.retryBaseDelayMs,
    idleTimeoutMs: config.idleTimeoutMs,
    models: config.models,
  })
  // The provider SDKs load only when a model of theirs is created (see providers.ts): a cold start that uses one
  // provider (or the scripted model) does not pay for parsing the others.
  ctx.inject(['llm'], (ctx) => registerProviders(ctx.llm))
}
