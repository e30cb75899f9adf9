// Permission decisions (the `permission/decision` log event of @keel/permissions) as the page shows them. The words
// are @keel/permissions' `describeDecision` (the terminal UI and `keel sessions show` use it; a test keeps this copy
// equal), restated here because the browser bundle cannot import that Node package.

export interface DecisionView {
  decision: 'allow' | 'deny'
  scope: 'once' | 'always' | 'rule' | 'mode'
  rule?: string
  /** For `always`: the settings file the rule was saved to. */
  file?: string
}

const SCOPES = new Set(['once', 'always', 'rule', 'mode'])

/** A decision event's data, checked by shape (the log is read, not trusted). */
export function parseDecision(data: unknown): DecisionView | undefined {
  const value = data as { decision?: unknown; scope?: unknown; rule?: unknown; file?: unknown } | null
  if (
    !value ||
    (value.decision !== 'allow' && value.decision !== 'deny') ||
    typeof value.scope !== 'string' ||
    !SCOPES.has(value.scope)
  )
    return undefined
  return {
    decision: value.decision,
    scope: value.scope as DecisionView['scope'],
    ...(typeof value.rule === 'string' && value.rule ? { rule: value.rule } : {}),
    ...(typeof value.file === 'string' && value.file ? { file: value.file } : {}),
  }
}

/** One line: "✗ denied by rule bash(rm:*)", "✓ allowed once by the user". */
export function decisionText(data: DecisionView): string {
  const verb = data.decision === 'allow' ? '✓ allowed' : '✗ denied'
  switch (data.scope) {
    case 'rule':
      return `${verb} by rule ${data.rule ?? '?'}`
    case 'mode':
      return `${verb} by the permission mode`
    case 'once':
      return `${verb} once by the user`
    case 'always':
      return `${verb} always by the user${data.rule ? ` (${data.rule}${data.file ? ` saved to ${data.file}` : ''})` : ''}`
  }
}
