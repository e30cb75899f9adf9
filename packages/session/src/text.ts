// Text helpers every layer shares, the browser included: this module (the `@keel/session/text` entry) imports
// nothing from Node, so the web client bundles it. Escaping for terminals lives in escape.ts and is re-exported here.
export * from './escape.ts'

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
