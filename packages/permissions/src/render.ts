import type { SessionEventMap } from '@keel/session'

/** One line for a transcript: "✗ denied by rule bash(rm:*)", "✓ allowed once by the user". Not escaped. */
export function describeDecision(data: SessionEventMap['permission/decision']): string {
  const verb = `${data.decision === 'allow' ? '✓ allowed' : '✗ denied'}${data.host ? ` network access to ${data.host}` : ''}`
  if (data.interrupted) return `${verb}: the session was interrupted before anyone answered`
  switch (data.scope) {
    case 'rule':
      return `${verb} by rule ${data.rule ?? '?'}`
    case 'mode':
      return `${verb} by ${data.mode ? `${data.mode} mode` : 'the permission mode'}`
    case 'once':
      return `${verb} once ${byUser(data)}${said(data)}`
    case 'session':
      return `${verb} for this session ${byUser(data)} (${rulesOf(data)})${said(data)}`
    case 'hook':
      return `${verb} by a PreToolUse hook${said(data)}`
    case 'always':
      return `${verb} always ${byUser(data)}${data.rule || data.host ? ` (${rulesOf(data)}${data.file ? ` saved to ${data.file}` : ''})` : ''}${said(data)}`
  }
}

/** Who answered: "by the user", or "by the user on beta" when the answer came from another machine's door. */
function byUser(data: SessionEventMap['permission/decision']): string {
  return data.answeredOn ? `by the user on ${data.answeredOn}` : 'by the user'
}

function rulesOf(data: SessionEventMap['permission/decision']): string {
  if (data.host && !data.rule) return data.host
  return (data.rules ?? (data.rule ? [data.rule] : [])).join(', ')
}

function said(data: SessionEventMap['permission/decision']): string {
  return data.message ? `: “${data.message}”` : ''
}

/** One line for a mode change: "mode: auto (was ask)". */
export function describeModeChange(data: SessionEventMap['permission/mode']): string {
  return `mode: ${data.mode} (was ${data.previous})`
}
