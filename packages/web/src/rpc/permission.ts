import { isPermissionAnswer, isPermissionMode, MODE_CYCLE } from '@keel/permissions'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'
import { sessionIdOf } from './params.ts'

const NOT_LOADED = 'permissions are not loaded (add @keel/permissions to the composition)'

export const answerAsk: Method<'permission.answer'> = (served, params) => {
  if (!served.asks.enabled) throw new RpcFailure('unavailable', NOT_LOADED)
  const callId = params.callId
  if (typeof callId !== 'string' || !callId || callId.length > 256)
    throw new RpcFailure('bad-request', 'callId must be a non-empty string')
  const { decision, scope, file, message } = params
  const answer = {
    decision,
    scope,
    ...(file !== undefined ? { file } : {}),
    ...(message !== undefined ? { message } : {}),
  }
  if (!isPermissionAnswer(answer))
    throw new RpcFailure(
      'bad-request',
      'an answer is { decision: allow | deny, scope: once | session | always, file?: local | project, message?: text }',
    )
  const sessionId = sessionIdOf(params)
  if (served.asks.answer(sessionId, callId, answer)) return { accepted: true }
  // An ask of a session another process runs goes to that process through the store (a shared store only).
  if (served.remote && !served.ctx.sessions.get(sessionId))
    return served.remote.answer(sessionId, callId, answer).then((accepted) => ({ accepted }))
  return { accepted: false }
}

export const permissionMode: Method<'permission.mode'> = (served, params) => {
  const permissions = served.ctx.get('permissions')
  if (!permissions) throw new RpcFailure('unavailable', NOT_LOADED)
  const offered = () => (MODE_CYCLE.includes(permissions.mode) ? [...MODE_CYCLE] : [...MODE_CYCLE, permissions.mode])
  if (params.mode !== undefined) {
    if (!isPermissionMode(params.mode) || !offered().includes(params.mode))
      throw new RpcFailure('bad-request', `mode must be one of ${offered().join(', ')}`)
    const held = typeof params.sessionId === 'string' ? served.held.get(served.scopedSessionId(params)) : undefined
    permissions.setMode(params.mode, held ? [held.session] : [])
  }
  return { mode: permissions.mode, modes: offered() }
}
