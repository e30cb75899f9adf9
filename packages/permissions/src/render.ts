import type { SessionEventMap } from '@keel/session'

/** One line for a transcript: "✗ denied by rule bash(rm:*)", "✓ allowed once by the user". Not escaped. */
export function describeDecision(data: SessionEventMap['permission/decision']): string {
  const verb = data.decision === 'allow' ? '✓ allowed' : '✗ denied'
  if (data.interrupted) return `${verb}: the session was interrupted before anyone answered`
  switch (data.scope) {
    case 'rule':
      return `${verb} by rule ${data.rule ?? '?'}`
    case 'mode':
      return `${verb} by ${data.mode ? `${data.mode} mode` : 'the permission mode'}`
    case 'once':
      return `${verb} once by the user`
    case 'always':
      return `${verb} always by the user${data.rule ? ` (${data.rule}${data.file ? ` saved to ${data.file}` : ''})` : ''}`
  }
}
