import { RewindConflictError, RewindError } from '@keel/checkpoint'
import { errorLine, SessionLockedError, SessionNotFoundError } from '@keel/session'
import { PageRequestError } from '../history.ts'
import type { RpcError, RpcErrorCode } from '../protocol.ts'

/** A refusal an RPC method means to send: its code is the answer's `error.code`. */
export class RpcFailure extends Error {
  constructor(
    readonly code: RpcErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'RpcFailure'
  }
}

/** The answer for what a method threw, matched by the error's class; anything unknown is `internal`. */
export function toRpcError(error: unknown): RpcError {
  if (error instanceof RpcFailure) return { code: error.code, message: error.message }
  if (error instanceof PageRequestError) return { code: 'bad-request', message: error.message }
  if (error instanceof RewindConflictError) return { code: 'conflict', message: errorLine(error) }
  // No checkpoints for that turn, checkpoints off in that directory, or git failing: the files cannot go back.
  if (error instanceof RewindError) return { code: 'unavailable', message: errorLine(error) }
  if (error instanceof SessionNotFoundError) return { code: 'not-found', message: errorLine(error) }
  if (error instanceof SessionLockedError) return { code: 'busy', message: errorLine(error) }
  return { code: 'internal', message: errorLine(error) }
}

export function failure(code: RpcErrorCode, message: string): { ok: false; error: RpcError } {
  return { ok: false, error: { code, message } }
}
