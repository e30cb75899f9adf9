import { AnthropicAdapter } from './anthropic.ts'
import type { LlmService, ProviderOptions } from './index.ts'
import { OpenAiAdapter, type OpenAiAdapterOptions } from './openai.ts'
import { LlmError } from './types.ts'

/** Context windows (tokens) of well-known model families, matched on the model name after any `vendor/` prefix. */
const CONTEXT_WINDOWS: [RegExp, number][] = [
  [/^deepseek-(chat|reasoner)\b/, 128_000],
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-4o/, 128_000],
  [/^claude-/, 200_000],
]

/** Tokens the model accepts in one request, when the model is known; undefined otherwise. */
export function contextWindowFor(model: string): number | undefined {
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase()
  return CONTEXT_WINDOWS.find(([pattern]) => pattern.test(name))?.[1]
}

interface OpenAiFlavor {
  /** Default base URL; undefined means --base-url is required. */
  baseURL?: string
  /** Environment variable that overrides the default base URL. */
  baseUrlVariable?: string
  keyVariable: string
  keyRequired: boolean
  extra?: (env: ProviderOptions['env']) => Partial<OpenAiAdapterOptions>
}

const OPENAI_FLAVORS: Record<string, OpenAiFlavor> = {
  deepseek: { baseURL: 'https://api.deepseek.com', keyVariable: 'DEEPSEEK_API_KEY', keyRequired: true },
  openai: {
    baseURL: 'https://api.openai.com/v1',
    baseUrlVariable: 'OPENAI_BASE_URL',
    keyVariable: 'OPENAI_API_KEY',
    keyRequired: true,
    extra: (env) => ({ maxTokensField: 'max_completion_tokens', organization: value(env.OPENAI_ORG_ID), project: value(env.OPENAI_PROJECT_ID) }),
  },
  openrouter: { baseURL: 'https://openrouter.ai/api/v1', keyVariable: 'OPENROUTER_API_KEY', keyRequired: true, extra: () => ({ headers: { 'X-Title': 'Keel' } }) },
  'openai-compatible': { keyVariable: 'KEEL_API_KEY', keyRequired: false },
}

function value(text: string | undefined): string | undefined {
  const trimmed = text?.trim()
  return trimmed ? trimmed : undefined
}

function requireKey(provider: string, model: string, variable: string, env: ProviderOptions['env']): string {
  const key = value(env[variable])
  if (!key) throw new LlmError('config', `${variable} is not set (needed for --model ${provider}/${model})`)
  return key
}

function checkedUrl(url: string, provider: string, model: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http')
  } catch {
    throw new LlmError('config', `--base-url ${JSON.stringify(url)} is not an http(s) URL (for --model ${provider}/${model})`)
  }
  return url.replace(/\/+$/, '')
}

export function createOpenAiCompatible(provider: string, model: string, options: ProviderOptions): OpenAiAdapter {
  const flavor = OPENAI_FLAVORS[provider]
  if (!flavor) throw new LlmError('config', `unknown OpenAI-compatible provider ${JSON.stringify(provider)}`)
  const base = value(options.baseUrl) ?? (flavor.baseUrlVariable ? value(options.env[flavor.baseUrlVariable]) : undefined) ?? flavor.baseURL
  if (!base) throw new LlmError('config', `--base-url is required for --model ${provider}/${model} (for example http://localhost:11434/v1 for Ollama)`)
  return new OpenAiAdapter({
    provider,
    model,
    baseURL: checkedUrl(base, provider, model),
    apiKey: flavor.keyRequired ? requireKey(provider, model, flavor.keyVariable, options.env) : value(options.env[flavor.keyVariable]),
    keyVariable: flavor.keyVariable,
    contextWindow: contextWindowFor(model),
    idleTimeoutMs: options.idleTimeoutMs,
    ...flavor.extra?.(options.env),
  })
}

export function createAnthropic(model: string, options: ProviderOptions): AnthropicAdapter {
  const base = value(options.baseUrl) ?? value(options.env.ANTHROPIC_BASE_URL) ?? 'https://api.anthropic.com'
  const authToken = value(options.env.ANTHROPIC_AUTH_TOKEN)
  const apiKey = authToken && !value(options.env.ANTHROPIC_API_KEY) ? undefined : requireKey('anthropic', model, 'ANTHROPIC_API_KEY', options.env)
  return new AnthropicAdapter({
    model,
    baseURL: checkedUrl(base, 'anthropic', model),
    apiKey,
    authToken,
    keyVariable: apiKey ? 'ANTHROPIC_API_KEY' : 'ANTHROPIC_AUTH_TOKEN',
    contextWindow: contextWindowFor(model),
    idleTimeoutMs: options.idleTimeoutMs,
  })
}

/** One adapter of a real provider: anthropic (Messages) or an OpenAI-compatible flavour (chat completions). */
export function createProvider(provider: string, model: string, options: ProviderOptions): OpenAiAdapter | AnthropicAdapter {
  return provider === 'anthropic' ? createAnthropic(model, options) : createOpenAiCompatible(provider, model, options)
}

/** The real providers: deepseek, openai, openrouter, openai-compatible (chat completions) and anthropic (Messages). */
export function registerProviders(llm: LlmService): void {
  for (const provider of Object.keys(OPENAI_FLAVORS)) llm.register(provider, (model, options) => createOpenAiCompatible(provider, model, options))
  llm.register('anthropic', (model, options) => createAnthropic(model, options))
}
