import type { SessionEvent } from '@keel/session'

declare module '@keel/session' {
  interface SessionEventMap {
    /**
     * Between turns: the person switched the model (`provider/model`, as typed) for the following turns. Reopening
     * the session uses the last one, unless `--model` names another.
     */
    'session/model': { spec: string }
  }
}

/** The model the person last chose in this log (`session/model`), or undefined when they never switched. */
export function lastModelChoice(events: readonly SessionEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'session/model') return event.data.spec
  }
  return undefined
}

/** `provider/model` of an adapter: what the footer shows and what `/model` compares. */
export function modelSpecOf(model: { provider: string; model: string }): string {
  return `${model.provider}/${model.model}`
}
