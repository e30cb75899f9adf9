import { isSessionId } from '@keel/session'
import { RpcFailure } from './failure.ts'

/** A method's params: the request body's JSON object (`{}` when it sent none). */
export type Params = Record<string, unknown>

export function sessionIdOf(params: Params): string {
  const id = params.sessionId
  if (!isSessionId(id)) {
    const shown =
      typeof id === 'string' ? JSON.stringify(id.slice(0, 80)) : id === undefined ? 'nothing' : `a ${typeof id}`
    throw new RpcFailure(
      'invalid-session-id',
      `sessionId must be a session id (letters, digits, - and _), got ${shown}`,
    )
  }
  return id
}

export function optionalInteger(params: Params, key: string, min: number, max: number): number | undefined {
  const value = params[key]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RpcFailure('bad-request', `${key} must be an integer from ${min} to ${max}`)
  }
  return value
}

/** A list of file paths (the conflicts a person agreed to overwrite); none when absent. */
export function optionalPaths(params: Params, key: string): string[] {
  const value = params[key]
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.length > 100_000 || !value.every((p) => typeof p === 'string' && p.length <= 4096))
    throw new RpcFailure('bad-request', `${key} must be a list of file paths`)
  return value as string[]
}
