import type { RpcMethod, RpcMethods } from '../protocol.ts'
import type { Served } from '../served.ts'
import type { Params } from './params.ts'

/** One RPC method: checks its params (throwing `RpcFailure` to refuse) and answers with its value. */
export type Method<M extends RpcMethod> = (
  served: Served,
  params: Params,
) => Promise<RpcMethods[M]['value']> | RpcMethods[M]['value']
