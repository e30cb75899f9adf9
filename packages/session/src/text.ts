// Text helpers every layer shares, the browser included: this module (the `@keel/session/text` entry) imports
// nothing from Node, so the web client bundles it. Escaping for terminals lives in escape.ts and is re-exported here.
export * from './escape.ts'
export * from './outcome.ts'

/** Default length of an error line: long enough for a path and a reason, short enough for one row of a log. */
export const ERROR_LINE_MAX = 500

/**
 * An error reduced to one line for a log event, a warning or an RPC answer: the message's first line (a stack or
 * a provider's multi-line body stays out), cut to `max` characters. Not escaped: callers that print it escape it.
 */
export function errorLine(error: unknown, max = ERROR_LINE_MAX): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0]!.slice(0, max)
}

/**
 * Text for a one-line slot that must keep all of its words (a todo item in a row, a provider's error detail):
 * every run of whitespace, newlines included, becomes one space, and the ends are trimmed. With `max`, text longer
 * than that is cut to `max` characters ending in `...`.
 */
export function flattenLine(text: string, max?: number): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return max !== undefined && flat.length > max ? `${flat.slice(0, max - 3)}...` : flat
}

/** Edit distance where swapping two neighbouring letters costs one (`--modle` is one step from `--model`). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The candidate a mistyped word most likely meant (`--modle` → `model`, `/rewnd` → `rewind`), if any is close. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined
  let score = Infinity
  for (const candidate of candidates) {
    const d = distance(word, candidate)
    if (d < score) {
      score = d
      best = candidate
    }
  }
  return score <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined
}
