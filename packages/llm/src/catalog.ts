// What Keel knows about a model: context window, output limit, prices and capabilities. From a vendored snapshot
// of two maintained public datasets (scripts/refresh-models.ts says which and how to refresh it; nothing is fetched
// at run time), then the person's `models` settings on top. Imported only by the provider factories, which load
// when their first model is created, so a start-up that never makes a real model never parses the snapshot.
import type { ModelPrice } from '@keel/session/cost'
import snapshot from './catalog/snapshot.json' with { type: 'json' }

export interface ModelInfo {
  /** Tokens the model accepts in one request. */
  contextWindow?: number
  /** Tokens it may write in one reply: sent as `max_tokens`. */
  maxOutput?: number
  price?: ModelPrice
  /** Takes images. When false, images are replaced by a one-line note before the request (limits.ts). */
  vision?: boolean
  toolCalls?: boolean
  reasoning?: boolean
}

/** `models` in settings.json: `{ "<provider>/<model>": { contextWindow, maxOutput, vision, price } }`. */
export type ModelOverrides = Record<string, Partial<Omit<ModelInfo, 'price'>> & { price?: Partial<ModelPrice> }>

type Match =
  | { equals: string }
  | { starts_with: string }
  | { ends_with: string }
  | { contains: string }
  | { regex: string }
  | { or: Match[] }
  | { and: Match[] }

interface Entry extends ModelInfo {
  id: string
  match: Match
}

function matches(rule: Match, id: string): boolean {
  if ('equals' in rule) return id === rule.equals
  if ('starts_with' in rule) return id.startsWith(rule.starts_with)
  if ('ends_with' in rule) return id.endsWith(rule.ends_with)
  if ('contains' in rule) return id.includes(rule.contains)
  if ('regex' in rule) return new RegExp(rule.regex).test(id)
  if ('or' in rule) return rule.or.some((part) => matches(part, id))
  return rule.and.every((part) => matches(part, id))
}

const PROVIDERS = snapshot.providers as unknown as Record<string, Entry[]>

/**
 * When the snapshot has no output limit for a Claude model: every current Claude model writes at least 32k tokens
 * (the Opus 4.0/4.1 limit; later ones 64k–128k), and 8192 truncated big `write` calls on models that think first.
 */
const CLAUDE_MAX_OUTPUT = 32_000

/**
 * `openai-compatible` with no window from the server or the settings: small enough for most local servers' default
 * context, so automatic compaction starts early rather than never.
 */
export const OPENAI_COMPATIBLE_DEFAULT_WINDOW = 32_768

function snapshotEntry(provider: string, model: string): Entry | undefined {
  const list = PROVIDERS[provider]
  if (!list) return undefined
  const id = model.toLowerCase()
  // The most specific rule wins: an exact id before a prefix (claude-opus-4-5 before claude-opus-4).
  return list.find((entry) => entry.id === id) ?? list.find((entry) => matches(entry.match, id))
}

/**
 * When the catalog has no entry for `provider/model` and the settings none either: the one line that says which
 * defaults apply instead (the model still works), given what the adapter was made with. Undefined when it is known.
 */
export function defaultsLine(
  provider: string,
  model: string,
  overrides: ModelOverrides | undefined,
  made: { contextWindow?: number; price?: ModelPrice },
): string | undefined {
  if (snapshotEntry(provider, model) || overrides?.[`${provider}/${model}`]) return undefined
  const window = made.contextWindow ? `a ${made.contextWindow}-token context window` : 'no known context window'
  const price = made.price ? '' : ', no price (its cost is not counted)'
  return `${provider}/${model} is not in Keel's model catalog: using ${window}${price}, no known output limit; set models["${provider}/${model}"] in settings to say otherwise`
}

/** Catalog facts for `provider/model`, the settings' override applied last; every field may be absent. */
export function modelInfo(provider: string, model: string, overrides?: ModelOverrides): ModelInfo {
  const entry = snapshotEntry(provider, model)
  const info: ModelInfo = {}
  if (entry) {
    for (const key of ['contextWindow', 'maxOutput', 'price', 'vision', 'toolCalls', 'reasoning'] as const)
      if (entry[key] !== undefined) (info as Record<string, unknown>)[key] = entry[key]
  }
  const claude = provider === 'anthropic' || (provider === 'openrouter' && model.startsWith('anthropic/'))
  if (claude) {
    info.vision ??= true
    if (provider === 'anthropic') info.maxOutput ??= CLAUDE_MAX_OUTPUT
  }
  const override = overrides?.[`${provider}/${model}`]
  if (override) {
    const { price, ...rest } = override
    Object.assign(info, rest)
    if (price) {
      const merged = { ...info.price, ...price }
      if (typeof merged.input === 'number' && typeof merged.output === 'number') info.price = merged as ModelPrice
    }
  }
  if (info.maxOutput && info.contextWindow && info.maxOutput > info.contextWindow) info.maxOutput = info.contextWindow
  return info
}

/** A cache write kept an hour is billed at twice the input price, not the 5-minute 1.25× the catalog lists. */
export function priceForTtl(price: ModelPrice | undefined, ttl: '5m' | '1h'): ModelPrice | undefined {
  return price && ttl === '1h' ? { ...price, cacheWrite: price.input * 2 } : price
}
