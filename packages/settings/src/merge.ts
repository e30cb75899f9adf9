/** Where a value came from: a file path, `flag --model`, `env KEEL_MODEL`, or `default (<composition>)`. */
export type Source = string

export interface Layer {
  source: Source
  values: Record<string, unknown>
}

export interface Merged {
  values: Record<string, unknown>
  /** Dotted key (`todo.allowParallelInProgress`) → where its value came from. */
  sources: Record<string, Source>
}

/** Lists that add up across layers instead of replacing: a user's deny rule must survive a project's settings. */
const ACCUMULATING = new Set(['permissions.allow', 'permissions.deny', 'sandbox.allowedDomains'])

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}

/** Deep-merges layers, lowest precedence first; objects merge key by key, anything else is replaced. */
export function mergeLayers(layers: Layer[]): Merged {
  const merged: Merged = { values: {}, sources: {} }
  for (const layer of layers) mergeInto(merged, merged.values, layer.values, '', layer.source)
  return merged
}

function mergeInto(
  merged: Merged,
  target: Record<string, unknown>,
  values: Record<string, unknown>,
  prefix: string,
  source: Source,
): void {
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue
    const path = prefix ? `${prefix}.${key}` : key
    if (isPlainObject(value) && Object.keys(value).length) {
      if (!isPlainObject(target[key])) {
        target[key] = {}
        clearBelow(merged, path)
      }
      mergeInto(merged, target[key] as Record<string, unknown>, value, path, source)
    } else if (ACCUMULATING.has(path) && Array.isArray(value) && Array.isArray(target[key])) {
      target[key] = [...new Set([...(target[key] as unknown[]), ...value])]
      merged.sources[path] = `${merged.sources[path]} + ${source}`
    } else {
      clearBelow(merged, path)
      target[key] = value
      merged.sources[path] = source
    }
  }
}

function clearBelow(merged: Merged, path: string): void {
  delete merged.sources[path]
  for (const key of Object.keys(merged.sources)) if (key.startsWith(`${path}.`)) delete merged.sources[key]
}

/** Every leaf of a value as `dotted.key → value` (arrays and empty objects are leaves). */
export function flatten(values: Record<string, unknown>, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = []
  for (const [key, value] of Object.entries(values)) {
    const path = prefix ? `${prefix}.${key}` : key
    if (isPlainObject(value) && Object.keys(value).length) out.push(...flatten(value, path))
    else out.push([path, value])
  }
  return out
}
