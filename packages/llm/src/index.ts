import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { DEFAULT_IDLE_TIMEOUT_MS } from './idle.ts'
import { registerProviders } from './providers.ts'
import { loadScript, ScriptedAdapter } from './scripted.ts'
import { LlmError, type LlmAdapter, type LlmRequest, type StreamChunk } from './types.ts'

export * from './types.ts'
export * from './scripted.ts'
export { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch } from './idle.ts'

export interface ProviderOptions {
  baseUrl?: string
  cwd: string
  env: Record<string, string | undefined>
  /** Longest silence of a streamed request (no headers, then no event) before it counts as dropped. */
  idleTimeoutMs?: number
}

export type ProviderFactory = (model: string, options: ProviderOptions) => LlmAdapter | Promise<LlmAdapter>

declare module 'cordis' {
  interface Context {
    llm: LlmService
  }
}

export interface RetryPolicy {
  attempts: number
  baseDelayMs: number
}
export interface LlmServiceOptions extends RetryPolicy {
  idleTimeoutMs?: number
}

/**
 * `ctx.llm`: providers by name, and `create('provider/model')` → an adapter wrapped with bounded retries for
 * rate limits, server errors and dropped connections (only before any output arrived, so nothing is duplicated).
 */
export class LlmService extends Service {
  private readonly providers = new Map<string, ProviderFactory>()
  readonly retry: RetryPolicy
  readonly idleTimeoutMs: number

  constructor(ctx: Context, options: LlmServiceOptions = { attempts: 3, baseDelayMs: 500 }) {
    super(ctx, 'llm', true)
    this.retry = { attempts: options.attempts, baseDelayMs: options.baseDelayMs }
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
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
    const slash = spec.indexOf('/')
    if (slash <= 0 || slash === spec.length - 1)
      throw new LlmError('config', `--model must be <provider>/<model>, got ${JSON.stringify(spec)}`)
    const provider = spec.slice(0, slash)
    const factory = this.providers.get(provider)
    if (!factory)
      throw new LlmError(
        'config',
        `unknown provider ${JSON.stringify(provider)}; known: ${this.providerNames().join(', ')}`,
      )
    const adapter = await factory(spec.slice(slash + 1), {
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? process.env,
      baseUrl: options.baseUrl,
      idleTimeoutMs: options.idleTimeoutMs ?? this.idleTimeoutMs,
    })
    return withRetries(adapter, this.retry)
  }
}

export function withRetries(adapter: LlmAdapter, policy: RetryPolicy): LlmAdapter {
  if (adapter instanceof ScriptedAdapter) return adapter
  return {
    provider: adapter.provider,
    model: adapter.model,
    contextWindow: adapter.contextWindow,
    async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
      for (let attempt = 1; ; attempt++) {
        let started = false
        try {
          for await (const chunk of adapter.stream(request, signal)) {
            started = true
            yield chunk
          }
          return
        } catch (error) {
          const failure =
            error instanceof LlmError
              ? error
              : new LlmError(signal.aborted ? 'aborted' : 'network', (error as Error)?.message ?? String(error))
          if (signal.aborted || started || !failure.retryable || attempt >= policy.attempts) {
            if (failure.retryable && attempt > 1) failure.message += ` (after ${attempt} attempts)`
            throw failure
          }
          await new Promise((done) => setTimeout(done, policy.baseDelayMs * 2 ** (attempt - 1)))
        }
      }
    },
  }
}

/** Providers backed by real SDKs (see providers.ts). */
export const PROVIDER_NAMES = ['deepseek', 'openai', 'openrouter', 'openai-compatible', 'anthropic'] as const

export const name = 'keel-llm'
export interface Config {
  retryAttempts: number
  retryBaseDelayMs: number
  idleTimeoutMs?: number
}
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
})

export function apply(ctx: Context, config: Config): void {
  ctx.plugin(LlmService, {
    attempts: config.retryAttempts,
    baseDelayMs: config.retryBaseDelayMs,
    idleTimeoutMs: config.idleTimeoutMs,
  })
  // The provider SDKs load only when a model of theirs is created (see providers.ts): a cold start that uses one
  // provider (or the scripted model) does not pay for parsing the others.
  ctx.inject(['llm'], (ctx) => registerProviders(ctx.llm))
}
