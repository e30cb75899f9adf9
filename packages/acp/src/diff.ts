import { resolve } from 'node:path'

/** One file's change, as an ACP `diff` tool-call content wants it: `oldText` null for a new file. */
export interface FileDiff {
  path: string
  oldText: string | null
  newText: string
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

function firstString(data: Record<string, unknown>, keys: readonly string[]): string | undefined {
  for (const key of keys) if (typeof data[key] === 'string') return data[key] as string
  return undefined
}

/**
 * A diff a tool logged as structured data during its call: `{ path, newText, oldText? }`, either as the event's data
 * or under its `diff` key. The file tools may log one; anything else is not a diff and yields nothing.
 */
export function diffFromData(data: unknown, cwd: string): FileDiff | undefined {
  const outer = record(data)
  const shape = record(outer?.diff) ?? outer
  if (!shape || typeof shape.path !== 'string' || !shape.path || typeof shape.newText !== 'string') return undefined
  const oldText = typeof shape.oldText === 'string' ? shape.oldText : null
  return { path: resolve(cwd, shape.path), oldText, newText: shape.newText }
}

const PATH_KEYS = ['path', 'file_path', 'filePath', 'file']
const OLD_KEYS = ['old_string', 'oldText', 'old_text', 'oldString']
const NEW_KEYS = ['new_string', 'newText', 'new_text', 'newString']

/**
 * For an edit-kind call that logs no diff: a search-and-replace edit's own arguments are the two sides of the change.
 * A whole-file write is not turned into a diff here, since its previous content is unknown.
 */
export function diffFromArgs(args: unknown, cwd: string): FileDiff | undefined {
  const data = record(args)
  if (!data) return undefined
  const path = firstString(data, PATH_KEYS)
  const oldText = firstString(data, OLD_KEYS)
  const newText = firstString(data, NEW_KEYS)
  if (!path || oldText === undefined || newText === undefined) return undefined
  return { path: resolve(cwd, path), oldText, newText }
}

/** The call a logged diff belongs to: the `callId` it names, or the only call running when it names none. */
export function callOfData(data: unknown, openCalls: readonly string[]): string | undefined {
  const callId = record(data)?.callId
  if (typeof callId === 'string') return openCalls.includes(callId) ? callId : undefined
  return openCalls.length === 1 ? openCalls[0] : undefined
}
