import type { SessionInfo } from '../../protocol.ts'

function when(ms: number): string {
  const date = new Date(ms)
  const today = new Date()
  return date.toDateString() === today.toDateString()
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString([], { month: 'short', day: 'numeric' })
}

/** The last segment of a path: enough to tell projects apart in the `--all` list. */
function baseName(path: string): string {
  return (
    path
      .replace(/[\\/]+$/, '')
      .split(/[\\/]/)
      .pop() || path
  )
}

export function SessionList({
  sessions,
  selected,
  all = false,
  onSelect,
  onCreate,
}: {
  sessions: readonly SessionInfo[]
  selected: string | null
  /** Sessions of every directory are listed: each row names its directory. */
  all?: boolean
  onSelect: (id: string) => void
  onCreate: () => void
}) {
  const top = sessions.filter((session) => !session.parent)
  return (
    <nav className="sessions" aria-label="Sessions">
      <button type="button" className="new-session" data-testid="new-session" onClick={onCreate}>
        New session
      </button>
      <ul>
        {top.map((session) => (
          <li key={session.id}>
            <button
              type="button"
              className={session.id === selected ? 'session-item selected' : 'session-item'}
              data-testid="session-item"
              aria-current={session.id === selected ? 'page' : undefined}
              onClick={() => onSelect(session.id)}
            >
              <span className="session-title">{session.title || 'New session'}</span>
              <span className="session-meta">
                {all && (
                  <span className="session-cwd" title={session.cwd}>
                    {baseName(session.cwd)} ·{' '}
                  </span>
                )}
                {session.running ? 'running' : when(session.updatedAt)}
              </span>
            </button>
          </li>
        ))}
      </ul>
      {!top.length && (
        <p className="sessions-empty">{all ? 'No sessions yet.' : 'No sessions in this directory yet.'}</p>
      )}
    </nav>
  )
}
