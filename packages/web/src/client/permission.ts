// Permission decisions (the `permission/decision` log event of @keel/permissions) as the page shows them. The words
// are @keel/permissions' own `describeDecision`, from its browser-safe entry; what is here checks the event's data,
// because the log is read, not trusted.
import { type DecisionScope, describeDecision, isPermissionMode } from '@keel/permissions/decisions'
import type { SessionEventMap } from '@keel/session'

export { describeDecision }

/** The data of a `permission/decision` event. */
export type DecisionView = SessionEventMap['permission/decision']

const SCOPES: ReadonlySet<string> = new Set<DecisionScope>(['once', 'always', 'rule', 'mode'])

/** A decision event's data, checked field by field: known values are kept, anything else drops the decision. */
export function parseDecision(data: unknown): DecisionView | undefined {
  if (!data || typeof data !== 'object') return undefined
  const { callId, decision, scope, rule, file, mode, interrupted } = data as Record<string, unknown>
  if (typeof callId !== 'string' || (decision !== 'allow' && decision !== 'deny')) return undefined
  if (typeof scope !== 'string' || !SCOPES.has(scope)) return undefined
  return {
    callId,
    decision,
    scope: scope as DecisionScope,
    ...(typeof rule === 'string' && rule ? { rule } : {}),
    ...(typeof file === 'string' && file ? { file } : {}),
    ...(isPermissionMode(mode) ? { mode } : {}),
    ...(interrupted === true ? { interrupted } : {}),
  }
}
