/**
 * What one session this host serves is doing. One state per session, so the rules of what may start when (a prompt,
 * a compaction, a rewind) read from one place instead of several collections kept in step.
 */
export type SessionState =
  | { kind: 'idle' }
  /** A prompt's turn runs; `done` settles when it ended (it never rejects). */
  | { kind: 'turn'; done: Promise<void> }
  /** A manual compaction runs, or waits to be committed at the next request: the agent holds it, so stays open. */
  | { kind: 'compacting' }
  /** A rewind runs: nothing else starts until it ends, then the session is back in `after`. */
  | { kind: 'rewinding'; after: IdleOrCompacting }

type IdleOrCompacting = Extract<SessionState, { kind: 'idle' | 'compacting' }>

const IDLE: SessionState = { kind: 'idle' }

/** The state of each session; idle ones are not stored. */
export class SessionStates {
  private readonly states = new Map<string, Exclude<SessionState, { kind: 'idle' }>>()

  of(id: string): SessionState {
    return this.states.get(id) ?? IDLE
  }

  set(id: string, state: SessionState): void {
    if (state.kind === 'idle') this.states.delete(id)
    else this.states.set(id, state)
  }

  /** Moves to `next` only if the session is still in `from` (the same state object): a later start is kept. */
  settle(id: string, from: SessionState, next: SessionState): void {
    if (this.of(id) === from) this.set(id, next)
  }

  /** A prompt's turn runs in the session. */
  running(id: string): boolean {
    return this.of(id).kind === 'turn'
  }

  /** The sessions with a running turn, and the promise of each. */
  turns(): { id: string; done: Promise<void> }[] {
    const out: { id: string; done: Promise<void> }[] = []
    for (const [id, state] of this.states) if (state.kind === 'turn') out.push({ id, done: state.done })
    return out
  }
}
