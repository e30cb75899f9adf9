import type { TodoStatus } from '../plan.ts'

const LABELS: Record<TodoStatus, string> = { completed: 'completed', in_progress: 'in progress', pending: 'pending' }

/** Three shapes that differ without colour too: a filled check, a half-filled ring, a dashed ring. */
export function StatusGlyph({ status }: { status: TodoStatus }) {
  return (
    <span className={`glyph glyph-${status}`} role="img" aria-label={LABELS[status]} title={LABELS[status]}>
      <svg viewBox="0 0 16 16" width="14" height="14" aria-hidden="true">
        {status === 'completed' && (
          <>
            <circle cx="8" cy="8" r="7" className="glyph-fill" />
            <path d="M4.6 8.3l2.2 2.2 4.6-4.8" className="glyph-check" />
          </>
        )}
        {status === 'in_progress' && (
          <>
            <circle cx="8" cy="8" r="6.2" className="glyph-ring" />
            <path d="M8 1.8a6.2 6.2 0 0 1 0 12.4z" className="glyph-half" />
          </>
        )}
        {status === 'pending' && <circle cx="8" cy="8" r="6.2" className="glyph-dashed" />}
      </svg>
    </span>
  )
}
