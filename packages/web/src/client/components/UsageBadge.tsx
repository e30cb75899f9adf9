import { useSyncExternalStore } from 'react'
import { costLabel } from '@keel/session/cost'
import type { ConversationStore } from '../store.ts'

/** 12345 → "12.3k", 1234567 → "1.23M". */
function compactCount(n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(2)}M`
}

/** The model, the session's tokens and the share of the context window in use, as the provider reported them. */
export function UsageBadge({ store }: { store: ConversationStore }) {
  const { model, usage } = useSyncExternalStore(store.subscribe, store.getSnapshot)
  if (!model) return null
  const window = model.contextWindow
  const share =
    window && usage.context !== undefined ? Math.min(100, Math.round((usage.context / window) * 100)) : undefined
  const title = [
    `${model.provider}/${model.model}`,
    usage.total !== undefined
      ? `${usage.total.toLocaleString()} tokens used in this session`
      : 'tokens used: known once the session is open here (send a message)',
    usage.context !== undefined
      ? `${usage.context.toLocaleString()} tokens in context${window ? ` of ${window.toLocaleString()}` : ''}`
      : 'no usage reported yet',
  ].join('\n')
  return (
    <div className="usage" data-testid="usage" title={title}>
      <span className="usage-model" data-testid="usage-model">
        {model.model}
      </span>
      {usage.total !== undefined && (
        <span className="usage-tokens" data-testid="usage-tokens">
          {compactCount(usage.total)} tok
        </span>
      )}
      {usage.cost && costLabel(usage.cost) && (
        <span className="usage-cost" data-testid="usage-cost">
          {costLabel(usage.cost)}
        </span>
      )}
      {share !== undefined && (
        <span className={share >= 80 ? 'usage-context high' : 'usage-context'} data-testid="usage-context">
          <span className="usage-bar" aria-hidden="true">
            <span className="usage-fill" style={{ width: `${share}%` }} />
          </span>
          {share}% context
        </span>
      )}
    </div>
  )
}
