import type { RpcMethod, RpcMethods, RpcResult } from '../protocol.ts'
import type { Served } from '../served.ts'
import { RpcFailure, toRpcError } from './failure.ts'
import { listCommands } from './commands.ts'
import { history } from './history.ts'
import type { Method } from './method.ts'
import type { Params } from './params.ts'
import { answerAsk, permissionMode } from './permission.ts'
import { planAnswer, planEdit } from './plan.ts'
import { removeQueued } from './queue.ts'
import { rewind, rewindPreview } from './rewind.ts'
import { shell } from './shell.ts'
import { cancel, compact, createSession, listSessions, prompt } from './session.ts'
import { trustGrant, trustStatus } from './trust.ts'

/** Every RPC method: a new one is its wire type in protocol.ts, its function, and one line here. */
const METHODS: { [M in RpcMethod]: Method<M> } = {
  'session.list': listSessions,
  'session.create': createSession,
  'session.history': history,
  'session.prompt': prompt,
  'session.cancel': cancel,
  'permission.answer': answerAsk,
  'permission.mode': permissionMode,
  'session.compact': compact,
  'session.rewindPreview': rewindPreview,
  'session.rewind': rewind,
  'session.shell': shell,
  'queue.remove': removeQueued,
  'trust.status': trustStatus,
  'trust.grant': trustGrant,
  'commands.list': listCommands,
  'plan.edit': planEdit,
  'plan.answer': planAnswer,
}

/**
 * Runs one method on what the host serves. `served` is asked for only once the method and params were checked, so a
 * host still starting answers `unavailable` to a good request and `unknown-method` to a bad one alike.
 */
export async function callMethod<M extends RpcMethod>(
  method: M,
  params: unknown,
  served: () => Served,
): Promise<RpcResult<RpcMethods[M]['value']>> {
  try {
    if (!Object.hasOwn(METHODS, method))
      throw new RpcFailure(
        'unknown-method',
        `unknown method ${JSON.stringify(String(method)).slice(0, 80)}; methods: ${Object.keys(METHODS).join(', ')}`,
      )
    if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
      throw new RpcFailure('bad-request', 'params must be a JSON object')
    }
    const handler = METHODS[method] as Method<M>
    return { ok: true, value: await handler(served(), (params ?? {}) as Params) }
  } catch (error) {
    return { ok: false, error: toRpcError(error) }
  }
}
