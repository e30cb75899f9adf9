import type { Agent } from '@keel/agent'

export interface HeldAgentsOptions {
  /** Idle agents beyond this many are closed, least recently used first. */
  maxOpen: number
  /** An agent unused for this long is closed. */
  idleMs: number
  /** Whether an agent must stay open (a turn is running, a compaction waits for its next request). */
  busy(agent: Agent): boolean
  close(agent: Agent): void
}

/**
 * The agents the web host holds. Each holds its session file open (and its lock), so idle ones are closed — past
 * `maxOpen`, least recently used first, and any left unused for `idleMs` — and the host resumes them on their next
 * use; the log on disk is the whole state.
 */
export class HeldAgents {
  /** In use order, least recent first (a touched entry is moved to the end). */
  private readonly agents = new Map<string, { agent: Agent; usedAt: number }>()
  private readonly timer: ReturnType<typeof setInterval>

  constructor(private readonly options: HeldAgentsOptions) {
    this.timer = setInterval(() => this.sweep(), Math.max(10, Math.min(options.idleMs / 2, 60_000)))
    this.timer.unref?.()
  }

  get size(): number {
    return this.agents.size
  }

  has(id: string): boolean {
    return this.agents.has(id)
  }

  /** The held agent of a session, marked as just used. */
  get(id: string): Agent | undefined {
    const entry = this.agents.get(id)
    if (!entry) return undefined
    this.agents.delete(id)
    entry.usedAt = Date.now()
    this.agents.set(id, entry)
    return entry.agent
  }

  /** Holds a newly opened agent, then closes idle ones beyond the limit (never this one). */
  add(agent: Agent): void {
    this.agents.set(agent.id, { agent, usedAt: Date.now() })
    this.sweep(agent.id)
  }

  values(): Agent[] {
    return [...this.agents.values()].map((entry) => entry.agent)
  }

  /** Stops sweeping and forgets every agent (the caller closes them). */
  clear(): void {
    clearInterval(this.timer)
    this.agents.clear()
  }

  /** Closes agents idle for `idleMs`, then the least recently used idle ones while more than `maxOpen` are held. */
  sweep(keep?: string): void {
    const { maxOpen, idleMs, busy } = this.options
    const now = Date.now()
    for (const [id, entry] of this.agents) {
      if (id !== keep && now - entry.usedAt >= idleMs && !busy(entry.agent)) this.release(id, entry.agent)
    }
    let excess = this.agents.size - maxOpen
    for (const [id, entry] of this.agents) {
      if (excess <= 0) break
      if (id === keep || busy(entry.agent)) continue
      this.release(id, entry.agent)
      excess--
    }
  }

  private release(id: string, agent: Agent): void {
    this.agents.delete(id)
    try {
      this.options.close(agent)
    } catch {}
  }
}
