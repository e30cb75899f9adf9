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
  host,
  onSelect,
  onCreate,
}: {
  sessions: readonly SessionInfo[]
  selected: string | null
  /** Sessions of every directory are listed: each row names its directory. */
  all?: boolean
  /** This machine's name in a shared store: a session of another machine names its host. */
  host?: string
  onSelect: (id: string) => void
  onCreate: () => void
}) {
  // Subagents show inside their parent's transcript, not here; forks go under the session they branched from.
  const listed = sessions.filter((session) => !session.parent)
  const known = new Set(listed.map((session) => session.id))
  const forks = new Map<string, SessionInfo[]>()
  for (const session of listed) {
    const origin = session.forkedFrom?.sessionId
    if (!origin || !known.has(origin)) continue
    forks.set(origin, [...(forks.get(origin) ?? []), session])
  }
  const top = listed.filter((session) => !session.forkedFrom || !known.has(session.forkedFrom.sessionId))
  const rows: { session: SessionInfo; depth: number }[] = []
  const seen = new Set<string>()
  const walk = (session: SessionInfo, depth: number) => {
    if (seen.has(session.id)) return
    seen.add(session.id)
    rows.push({ session, depth })
    for (const fork of forks.get(session.id) ?? []) walk(fork, depth + 1)
  }
  for (const session of top) walk(session, 0)
  return (
    <nav className="sessions" aria-label="Sessions">
      <button type="button" className="new-session" data-testid="new-session" onClick={onCreate}>
        New session
      </button>
      <ul>
        {rows.map(({ session, depth }) => (
          <li
            key={session.id}
            className={depth ? 'session-fork' : undefined}
            style={depth ? { paddingLeft: `${Math.min(depth, 4) * 14}px` } : undefined}
          >
            <button
              type="button"
              className={session.id === selected ? 'session-item selected' : 'session-item'}
              data-testid="session-item"
              data-fork-of={session.forkedFrom?.sessionId}
              aria-current={session.id === selected ? 'page' : undefined}
              title={depth ? `Forked from session ${session.forkedFrom!.sessionId.slice(0, 8)}` : undefined}
              onClick={() => onSelect(session.id)}
            >
              <span className="session-title">
                {depth > 0 && (
                  <>
                    <ForkMark />
                    <span className="visually-hidden">Fork: </span>
                  </>
                )}
                {session.title || 'New session'}
              </span>
              <span className="session-meta">
                {all && (
                  <span className="session-cwd" title={session.cwd}>
                    {baseName(session.cwd)} ·{' '}
                  </span>
                )}
                {host && session.host && session.host !== host && (
                  <span className="session-host" data-testid="session-host">
                    {session.host} ·{' '}
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

/** A branch glyph drawn inline (the ⑂ character is missing from many fonts). */
function ForkMark() {
  return (
    <svg
      className="fork-mark"
      viewBox="0 0 16 16"
      width="12"
      height="12"
      aria-hidden="true"
      fill="none"
      stroke="currentColor"
      strokeWidth="1.5"
    >
      <circle cx="5" cy="3.5" r="1.5" />
      <circle cx="5" cy="12.5" r="1.5" />
      <circle cx="11" cy="3.5" r="1.5" />
      <path d="M5 5v6M11 5c0 4-6 2.5-6 6" />
    </svg>
  )
}
