import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import { notify } from '@keel/session/notice'
import { DEFAULT_IDLE_TIMEOUT_MS } from './idle.ts'
import { reasoningFor, registerProviders, splitSpec } from './providers.ts'
import {
  DEFAULT_MAX_TOTAL_WAIT_MS,
  DEFAULT_MAX_WAIT_MS,
  type RetryNotice,
  type RetryPolicy,
  withRetries,
} from './retries.ts'
import {
  expandHeaders,
  type ModelSettings,
  ModelSettingsSchema,
  type ProviderSettings,
  ProviderSettingsSchema,
} from './model-settings.ts'
import type { CacheTtl } from './anthropic-cache.ts'
import { loadScript, ScriptedAdapter } from './scripted.ts'
import { LlmError, type LlmAdapter, type ProviderFactory, type ProviderOptions } from './types.ts'

export * from './types.ts'
export * from './scripted.ts'
export { DEFAULT_IDLE_TIMEOUT_MS, IdleWatch } from './idle.ts'
export { type RetryNotice, type RetryPolicy, retryText, serverWaitMs, withRetries } from './retries.ts'
export type { ModelInfo, ModelOverrides } from './catalog.ts'
export type { ModelSettings, ProviderSettings } from './model-settings.ts'
export type { CacheTtl } from './anthropic-cache.ts'
export { CURRENT_MODELS, PROVIDER_NAMES } from './providers.ts'
export { imageRefusal } from './limits.ts'

declare module 'cordis' {
  interface Context {
    llm: LlmService
  }
  interface Events {
    /**
     * A request failed and will be sent again after `notice.waitMs`; `sessionId` is the request's.
     * @mode emit
     */
    'llm/retry'(notice: RetryNotice, sessionId: string | undefined): void
  }
}

export interface LlmServiceOptions extends RetryPolicy {
  idleTimeoutMs?: number
  /** `provider/model` → catalog overrides and how it thinks (settings `models`). */
  models?: ModelSettings
  promptCacheTtl?: CacheTtl
  /** Provider name → extra request headers (settings `providers`). */
  providers?: ProviderSettings
}

/**
 * `ctx.llm`: providers by name, and `create('provider/model')` → an adapter wrapped with bounded retries for
 * rate limits, server errors and dropped connections (only before any output arrived, so nothing is duplicated).
 */
export class LlmService extends Service {
  private readonly providers = new Map<string, ProviderFactory>()
  /** Keys already told (`tell`): each notice once. */
  private readonly told = new Set<string>()
  readonly retry: RetryPolicy
  readonly idleTimeoutMs: number
  readonly models: ModelSettings
  private readonly promptCacheTtl?: CacheTtl
  private readonly providerSettings: ProviderSettings

  constructor(ctx: Context, options: LlmServiceOptions = { attempts: 6, baseDelayMs: 500 }) {
    super(ctx, 'llm', true)
    this.retry = {
      attempts: options.attempts,
      baseDelayMs: options.baseDelayMs,
      maxWaitMs: options.maxWaitMs,
      maxTotalWaitMs: options.maxTotalWaitMs,
    }
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
    this.models = options.models ?? {}
    this.promptCacheTtl = options.promptCacheTtl
    this.providerSettings = options.providers ?? {}
    this.providers.set('scripted', (model, options) => {
      const script = loadScript(model, options.cwd)
      const window = script.contextWindow
      return new ScriptedAdapter(script, model, typeof window === 'number' && window > 0 ? window : undefined)
    })
  }

  private headersOf(provider: string, env: ProviderOptions['env']): Record<string, string> | undefined {
    try {
      return expandHeaders(this.providerSettings[provider]?.headers, env, `providers.${provider}`)
    } catch (error) {
      throw new LlmError('config', (error as Error).message)
    }
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
      tell: (key, text) => this.tell(key, text),
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? process.env,
      baseUrl: options.baseUrl,
      idleTimeoutMs: options.idleTimeoutMs ?? this.idleTimeoutMs,
      reasoning: reasoningFor(this.models, spec, options.reasoning),
      models: options.models ?? this.models,
      promptCacheTtl: options.promptCacheTtl ?? this.promptCacheTtl,
      headers: options.headers ?? this.headersOf(provider, options.env ?? process.env),
    })
    // A model the catalog does not know still works: which defaults apply is said once (scripted models are Keel's).
    if (provider !== 'scripted') {
      const { defaultsLine } = await import('./catalog.ts')
      const line = defaultsLine(provider, model, options.models ?? this.models, adapter)
      if (line) this.tell(`defaults:${spec}`, line)
    }
    return withRetries(adapter, this.retry, (notice, request) => this.ctx.emit('llm/retry', notice, request.sessionId))
  }

  /** A one-line notice from a model or its adapter, said once per key for the life of the plugin. */
  private tell(key: string, text: string): void {
    if (this.told.has(key)) return
    this.told.add(key)
    notify(this.ctx, 'model', text, 'info')
  }
}

export const name = 'keel-llm'
export interface Config {
  retryAttempts: number
  retryBaseDelayMs: number
  retryMaxWaitMs?: number
  retryMaxTotalWaitMs?: number
  idleTimeoutMs?: number
  promptCacheTtl?: CacheTtl
  models?: ModelSettings
  providers?: ProviderSettings
}

export const Config: Schema<Config> = Schema.object({
  retryAttempts: Schema.natural()
    .min(1)
    .default(6)
    .description('Attempts for a request that fails with 429, 5xx, overloaded, a dropped connection or a stall.'),
  retryBaseDelayMs: Schema.natural()
    .default(500)
    .description('First backoff delay when the server names no wait; doubles each retry, with jitter.'),
  retryMaxWaitMs: Schema.natural()
    .min(1)
    .default(DEFAULT_MAX_WAIT_MS)
    .description('Longest single wait between attempts, whatever retry-after asks for.'),
  retryMaxTotalWaitMs: Schema.natural()
    .min(1)
    .default(DEFAULT_MAX_TOTAL_WAIT_MS)
    .description('Longest total of the waits for one request; past it the failure is reported.'),
  promptCacheTtl: Schema.union(['5m', '1h'] as const)
    .default('5m')
    .description('How long Anthropic keeps the prompt cache: 5m, or 1h (writes cost 2x input instead of 1.25x).'),
  models: ModelSettingsSchema,
  providers: ProviderSettingsSchema,
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
    maxWaitMs: config.retryMaxWaitMs,
    maxTotalWaitMs: config.retryMaxTotalWaitMs,
    idleTimeoutMs: config.idleTimeoutMs,
    models: config.models,
    promptCacheTtl: config.promptCacheTtl,
    providers: config.providers,
  })
  // The provider SDKs load only when a model of theirs is created (see providers.ts): a cold start that uses one
  // provider (or the scripted model) does not pay for parsing the others.
  ctx.inject(['llm'], (ctx) => registerProviders(ctx.llm))
}
