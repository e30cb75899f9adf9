import type { OpenedSession, SessionEvent, SessionStore } from '@keel/session'

declare module '@keel/session' {
  interface SessionEventMap {
    /**
     * Between turns: the model (`provider/model`, as typed) of the following turns: the one a session started with
     * (before its first turn, with the `--base-url` it used), or one the person switched to (`/model`). Reopening the
     * session uses the last one, unless `--model` names another.
     */
    'session/model': { spec: string; baseUrl?: string }
  }
}

/** The model this log last recorded (`session/model`): the one it started with or last switched to. */
export function lastModel(events: readonly SessionEvent[]): { spec: string; baseUrl?: string } | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'session/model') return event.data
  }
  return undefined
}

/**
 * Session `id` opened for a resume that needs its recorded model first (`keel -c`, `/resume`): the resume then takes
 * over the session opened here (the store hands it the live one), so a long log is read and parsed once. `release`
 * closes it again when no resume took it over, unless this process held it open already. Throws as `open` does.
 */
export function openForResume(
  sessions: Pick<SessionStore, 'get' | 'open' | 'close'>,
  id: string,
): { opened: OpenedSession; recorded: { spec: string; baseUrl?: string } | undefined; release(): void } {
  const held = sessions.get(id) !== undefined
  const opened = sessions.open(id)
  return {
    opened,
    recorded: lastModel(opened.session.events),
    release: () => {
      if (!held) sessions.close(opened.session)
    },
  }
}

/** The spec of `lastModel`, or undefined when the log records none (a session from before models were recorded). */
export function lastModelChoice(events: readonly SessionEvent[]): string | undefined {
  return lastModel(events)?.spec
}

/** `provider/model` of an adapter: what the footer shows and what `/model` compares. */
export function modelSpecOf(model: { provider: string; model: string }): string {
  return `${model.provider}/${model.model}`
}
