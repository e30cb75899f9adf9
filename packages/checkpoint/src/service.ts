import { type Context, Service } from 'cordis'
import type { Agent } from '@keel/agent'
import { notify, type Session, type SessionEvent } from '@keel/session'
import { GitError } from './git.ts'
import { capture, type Directory, openDirectory, remeasure } from './directory.ts'
import type { Change, Limits } from './shadow.ts'

declare module '@keel/session' {
  interface SessionEventMap {
    /** The working directory's state, as a tree in the shadow repository: at a turn's start, and after a change. */
    'checkpoint/snapshot': { turn: number; kind: 'turn-start' | 'change'; tree: string; commit: string }
    /** Files were rewound to the start of `toTurn` (`before` is what they were, for --undo); written between turns. */
    'checkpoint/restore': {
      toTurn: number
      tree: string
      before: string
      files: string[]
      fork?: string
      undo?: boolean
    }
  }
}

declare module 'cordis' {
  interface Context {
    checkpoints: CheckpointService
  }
}

export interface CheckpointConfig extends Limits {
  enabled: boolean
}

/** Tools that never change files: a step that ran only these needs no new snapshot. */
const READ_ONLY_TOOLS = new Set(['read', 'grep', 'glob', 'ls', 'todo_write'])

export class RewindError extends Error {}

/** The one wording of a refused rewind: what it would overwrite or delete that is not the agent's. */
export function conflictMessage(conflicts: readonly string[], hint: string, changedSincePreview = false): string {
  return `these files changed since the agent's last checkpoint or are ignored by git (not the agent's), and would be overwritten or deleted${changedSincePreview ? ' (some changed after the list was shown)' : ''}: ${conflicts.join(', ')} (${hint})`
}

export interface RewindPlan {
  session: string
  toTurn: number
  /** The tree files go back to. */
  target: string
  /** The work tree as it is now. */
  current: string
  /** The files the rewind changes (repositories of their own are not among them: see `repositories`). */
  changes: Change[]
  /**
   * Paths the rewind would overwrite or delete that are not the agent's: changed since its last snapshot, or (to be
   * deleted) ignored by git now or in the target, such as a `.env` a changed `.gitignore` let a snapshot take.
   */
  conflicts: string[]
  /** Nested repositories that differ: git keeps only their commit, so the rewind leaves their folders as they are. */
  repositories: string[]
}

/** A tool that waits longer than this for a snapshot is announced, so a long first snapshot is never a silent stall. */
const SLOW_SNAPSHOT_MS = 1000

/** How long after a session opens its folder's warm-up begins, unless a snapshot began first. */
const WARM_AFTER_MS = 250

/** How long closing an agent waits for its last re-check; one not done by then is covered by the next snapshot. */
const FLUSH_MS = 5000

/**
 * `ctx.checkpoints`: before each model request, a snapshot of the working directory at the start of every turn
 * and after any step whose tools may have changed files (`bash`, `write`, `edit`, `task`, MCP tools…), recorded as
 * `checkpoint/snapshot` events. `plan`/`rewind`/`undo` restore a session's files from them.
 */
export class CheckpointService extends Service {
  private readonly directories = new Map<string, Directory>()

  constructor(
    ctx: Context,
    readonly config: CheckpointConfig,
  ) {
    super(ctx, 'checkpoints', true)
    // The snapshot runs beside the model request instead of before it (it is tens to hundreds of milliseconds of
    // git), and every tool that may change a file waits until git has read the work tree: the state it records is
    // still the state before anything of this step changed.
    ctx.on('agent/prepare', async (agent) => this.startSnapshot(agent))
    ctx.on('agent/before-tools', async (agent, tools) => {
      if (tools.some((tool) => !READ_ONLY_TOOLS.has(tool))) await this.waitShown(agent)
    })
    // A step's tools are done once its first result is logged (results follow all of a batch): the re-check of the
    // tree they may have changed begins now, while the next request is built and sent, instead of after it. The
    // next request's snapshot takes that capture (it began after the tools ended).
    ctx.on('session/event', (session, event) => {
      if (event.type !== 'tool/result') return
      const agent = this.agentOf.get(session)
      if (!agent || !writes(session.events, (event as SessionEvent<'tool/result'>).data.callId)) return
      this.toolsEnded.set(agent, performance.now())
      const directory = this.directories.get(agent.cwd)
      // A failure here is the snapshot's to say: it takes this capture, or begins another when this one failed.
      if (directory?.on && !directory.off) capture(directory, performance.now()).tree.catch(() => {})
    })
    // The first snapshot of a folder reads every file the project's own index does not vouch for: it starts soon
    // after a session is created or opened there, while the person types or the model thinks. A session prompted at
    // once (the web page) has its turn's snapshot first, which does that work; print mode began it as it started
    // (`prepare` in directory.ts).
    ctx.on('session/created', (session) => {
      if (!this.config.enabled || session.header.parent) return
      const directory = this.directory(session.header.cwd)
      directory.warm ??= directory.ready.then(async (off) => {
        await new Promise((done) => setTimeout(done, WARM_AFTER_MS).unref())
        if (!off && !directory.latest) capture(directory, 0).tree.catch(() => {})
      })
    })
    // The turn's end waits for its rewind point (the snapshot at its start), never for a re-check after a step:
    // that one lands when it is done (just after turn/end, between turns), or the next turn's snapshot covers it.
    ctx.on('agent/before-turn-end', async (agent) => {
      const first = this.turnStart.get(agent)
      if (first && first.turn === currentTurn(agent.session.events)) await first.done
    })
    // An agent closed for good (the process exits) lets its last re-check land first, for a bounded time.
    ctx.on('agent/before-close', async (agent) => {
      const pending = this.pending.get(agent)
      if (!pending) return
      let timer: NodeJS.Timeout | undefined
      await Promise.race([pending, new Promise((done) => (timer = setTimeout(done, FLUSH_MS)))])
      clearTimeout(timer)
    })
    ctx.inject(['invariants'], (ctx) => {
      ctx.invariants.allowBetweenTurns('checkpoint/restore')
      // A re-check that was not waited for lands after its turn's end.
      ctx.invariants.allowBetweenTurns('checkpoint/snapshot')
    })
  }

  private directory(cwd: string): Directory {
    let directory = this.directories.get(cwd)
    if (!directory) {
      directory = openDirectory(cwd, this.config)
      this.directories.set(cwd, directory)
    }
    return directory
  }

  /** Each agent's snapshots, one after another (they never reject: a failure is a `keel/notice`). */
  private readonly pending = new WeakMap<Agent, Promise<void>>()
  /** The agent of each session a snapshot was asked for in (subagents' are not: their parent's snapshots cover them). */
  private readonly agentOf = new WeakMap<Session, Agent>()
  /** When each agent's last tool that may change files ended (`performance.now()`). */
  private readonly toolsEnded = new WeakMap<Agent, number>()
  /** Each agent's log length at its last request: what came after may call for a new capture. */
  private readonly prepared = new WeakMap<Agent, number>()
  /** Each agent's last snapshot's capture: a tool that may change files waits for it. */
  private readonly captured = new WeakMap<Agent, Promise<void>>()
  /** Each agent's first snapshot of its current turn: the turn's rewind point, which the turn's end waits for. */
  private readonly turnStart = new WeakMap<Agent, { turn: number; done: Promise<void> }>()
  /** The snapshots under way per folder, which a rewind there waits for. */
  private readonly inFolder = new Map<string, Set<Promise<void>>>()

  /** Waits for the agent's capture; one that holds a tool back past SLOW_SNAPSHOT_MS is said, and its end too. */
  private async waitShown(agent: Agent): Promise<void> {
    const pending = this.captured.get(agent)
    if (!pending) return
    let timer: NodeJS.Timeout | undefined
    const slow = await Promise.race([
      pending.then(() => false),
      new Promise<boolean>((done) => (timer = setTimeout(() => done(true), SLOW_SNAPSHOT_MS))),
    ])
    clearTimeout(timer)
    if (!slow) return
    const started = Date.now()
    const files = this.directories.get(agent.cwd)?.files
    notify(
      this.ctx,
      'checkpoint',
      `taking a checkpoint of ${agent.cwd}${files ? ` (${files.toLocaleString('en-US')} files)` : ''} before the tool runs; the first one of a folder reads every file`,
      'info',
    )
    await pending
    notify(
      this.ctx,
      'checkpoint',
      `checkpoint taken; the tool runs now (waited ${((Date.now() - started + SLOW_SNAPSHOT_MS) / 1000).toFixed(1)} s)`,
      'info',
    )
  }

  /**
   * Starts the snapshot this request needs, after the one still under way (whether the next is needed is read from
   * the log, which must hold the previous one first). Returns at once: the snapshot is not on the request's path.
   */
  private startSnapshot(agent: Agent): void {
    // A subagent works in its parent's directory during the parent's `task` call; the parent's snapshots cover it.
    if (!this.config.enabled || agent.depth > 0) return
    this.agentOf.set(agent.session, agent)
    const previous = this.pending.get(agent)
    const events = agent.session.events
    // Nothing since the last request could have changed a file (read-only tools, no new turn): this step's tools may
    // start once that request's capture has read the tree, not after its tree, commit and event too.
    let captured = () => {}
    if (!previous || mayHaveWritten(events, this.prepared.get(agent) ?? 0))
      this.captured.set(agent, new Promise<void>((done) => (captured = done)))
    const asked = events.length
    this.prepared.set(agent, asked)
    const next = (async () => {
      await previous
      // The request this step is preparing goes out first: starting git costs the main thread a few ms of forking,
      // and no tool can change a file before git has read the tree (agent/before-tools waits for it).
      await new Promise((done) => setImmediate(done))
      try {
        await this.snapshot(agent, captured, asked)
      } catch (error) {
        // An agent closed before its last re-check landed: the next snapshot of the folder covers it.
        if (agent.status !== 'disposed')
          notify(
            this.ctx,
            'checkpoint',
            `checkpoint skipped: ${error instanceof Error ? error.message : String(error)}`,
          )
      } finally {
        captured()
      }
    })()
    this.pending.set(agent, next)
    const turn = currentTurn(agent.session.events)
    if (this.turnStart.get(agent)?.turn !== turn) this.turnStart.set(agent, { turn, done: next })
    let folder = this.inFolder.get(agent.cwd)
    if (!folder) this.inFolder.set(agent.cwd, (folder = new Set()))
    folder.add(next)
    void next.then(() => folder.delete(next))
  }

  /** Waits for every snapshot under way in `cwd`: a rewind plans against the log they complete. */
  private async settled(cwd: string): Promise<void> {
    await Promise.all(this.inFolder.get(cwd) ?? [])
  }

  /**
   * Per agent, the log events whose effects the shadow has seen (a capture begun after them, or a re-check that
   * found the tree unchanged): tool calls among them need no new snapshot, so the steps after an unchanged `bash`
   * (a read, a todo_write, the answer) start no git process at all.
   */
  private readonly covered = new WeakMap<Agent, number>()

  /**
   * The snapshot a request asked for when the log held `seen` events: what came after (the step's own tool calls,
   * which may already run when they waited for an earlier capture) is for the next request's snapshot to judge.
   */
  private async snapshot(agent: Agent, captured: () => void, seen: number): Promise<void> {
    const kind = needsSnapshot(agent.session.events, this.covered.get(agent) ?? 0, seen)
    if (!kind) return
    // A capture that began after this step's tools ended (the one their result started) holds what they changed.
    const after = (kind.kind === 'change' && this.toolsEnded.get(agent)) || performance.now()
    const directory = this.directory(agent.cwd)
    const off = (await directory.ready) ?? directory.off
    if (off) {
      if (!this.warned.has(agent.cwd)) {
        this.warned.add(agent.cwd)
        // Checkpoints are off for this directory (no git, or the tree is over the limits).
        notify(this.ctx, 'checkpoint', off)
      }
      return
    }
    const taken = capture(directory, after)
    await taken.added
    captured()
    const tree = await taken.tree
    remeasure(directory)
    const last = lastSnapshot(agent.session.events)
    if (kind.kind === 'change' && last?.data.tree === tree) {
      this.covered.set(agent, seen)
      return
    }
    const commit = await directory.shadow.keep(tree, agent.session.id, `turn ${kind.turn} ${kind.kind}`)
    // A change found after a later turn began is that turn's to record: its own snapshot, queued after this one,
    // takes the tree as it is then.
    if (kind.kind === 'turn-start' || currentTurn(agent.session.events) === kind.turn)
      agent.session.append('checkpoint/snapshot', { turn: kind.turn, kind: kind.kind, tree, commit })
    this.covered.set(agent, seen)
  }

  private readonly warned = new Set<string>()

  /** What rewinding session `id`'s files to the start of turn `toTurn` would change, and what it would overwrite. */
  async plan(events: readonly SessionEvent[], cwd: string, toTurn: number, id: string): Promise<RewindPlan> {
    const target = events.find(
      (e): e is SessionEvent<'checkpoint/snapshot'> =>
        e.type === 'checkpoint/snapshot' && e.data.turn === toTurn && e.data.kind === 'turn-start',
    )
    if (!target) {
      const any = events.some((e) => e.type === 'checkpoint/snapshot')
      throw new RewindError(
        any
          ? `session ${id} has no checkpoint at the start of turn ${toTurn}`
          : `session ${id} has no file checkpoints (checkpoints were off for ${cwd}); its files cannot be rewound`,
      )
    }
    return this.planTo(events, cwd, toTurn, target.data.tree, id)
  }

  private async planTo(
    events: readonly SessionEvent[],
    cwd: string,
    toTurn: number,
    target: string,
    id: string,
  ): Promise<RewindPlan> {
    await this.settled(cwd)
    // A re-check that landed since the caller read the log (after its turn's end) is part of what the agent last saw.
    const log = this.ctx.sessions.get(id)?.events ?? events
    const directory = this.directory(cwd)
    const { shadow } = directory
    await directory.ready
    if (!(await shadow.hasTree(target)))
      throw new RewindError(`the checkpoint ${target.slice(0, 12)} of session ${id} is missing from ${shadow.gitDir}`)
    const current = await capture(directory, performance.now()).tree
    const all = await shadow.diff(current, target)
    const changes = all.filter((change) => !change.repository)
    const repositories = all.filter((change) => change.repository).map((change) => change.path)
    // What the agent last saw: its last snapshot, or the state a previous rewind left.
    const last = lastState(log)
    const touched = new Set(changes.map((change) => change.path))
    const changed = last
      ? (await shadow.diff(last, current)).map((change) => change.path).filter((path) => touched.has(path))
      : []
    const deleted = changes.filter((change) => change.status === 'D').map((change) => change.path)
    const ignored = await shadow.ignored(deleted, target)
    const conflicts = [...new Set([...changed, ...deleted.filter((path) => ignored.has(path))])]
    return { session: id, toTurn, target, current, changes, conflicts, repositories }
  }

  /** Restores the files of a plan (refusing conflicts unless `force`) and records it on the session. */
  async apply(
    plan: RewindPlan,
    cwd: string,
    session: Session,
    options: { force?: boolean; fork?: string; undo?: boolean } = {},
  ): Promise<void> {
    if (plan.conflicts.length && !options.force) {
      throw new RewindError(conflictMessage(plan.conflicts, 'use --force to rewind anyway'))
    }
    await this.settled(cwd)
    const { shadow } = this.directory(cwd)
    // A private index: it is filled from the work tree right now, so git knows every file is up to date.
    const index = `index.restore-${process.pid}`
    const current = await shadow.tree(index)
    try {
      await shadow.restore(current, plan.target, index)
    } catch (error) {
      throw new RewindError(error instanceof GitError ? error.message : String(error))
    }
    await shadow.keep(current, session.id, `before rewind to turn ${plan.toTurn}`)
    session.append('checkpoint/restore', {
      toTurn: plan.toTurn,
      tree: plan.target,
      before: current,
      files: plan.changes.map((change) => change.path),
      ...(options.fork ? { fork: options.fork } : {}),
      ...(options.undo ? { undo: true } : {}),
    })
  }

  /** The plan that undoes the session's latest rewind: back to the files it replaced. */
  async undoPlan(events: readonly SessionEvent[], cwd: string, id: string): Promise<RewindPlan> {
    const restore = [...events]
      .reverse()
      .find((e): e is SessionEvent<'checkpoint/restore'> => e.type === 'checkpoint/restore')
    if (!restore) throw new RewindError(`session ${id} has no rewind to undo`)
    return this.planTo(events, cwd, restore.data.toTurn, restore.data.before, id)
  }
}

/**
 * Whether the request asked for when the log held `seen` events needs a snapshot: at a turn's start (nothing of this
 * turn seen by the shadow yet), or after a step that may have changed files (a tool call the shadow has not seen: at
 * or after `covered`).
 */
function needsSnapshot(
  events: readonly SessionEvent[],
  covered: number,
  seen: number,
): { turn: number; kind: 'turn-start' | 'change' } | undefined {
  let changed = false
  for (let i = seen - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'tool/call' && i >= covered && !READ_ONLY_TOOLS.has(event.data.name)) changed = true
    if (event.type === 'turn/start') {
      if (i >= covered) return { turn: event.data.turn, kind: 'turn-start' }
      return changed ? { turn: event.data.turn, kind: 'change' } : undefined
    }
  }
  return undefined
}

/** Whether the call `callId` (found from the end of the log) was of a tool that may change files. */
function writes(events: readonly SessionEvent[], callId: string): boolean {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'tool/call' && (event as SessionEvent<'tool/call'>).data.callId === callId)
      return !READ_ONLY_TOOLS.has((event as SessionEvent<'tool/call'>).data.name)
    if (event.type === 'turn/start') return false
  }
  return false
}

/** Whether a turn began or a tool that may change files was called among the events from `from` on. */
function mayHaveWritten(events: readonly SessionEvent[], from: number): boolean {
  for (let i = from; i < events.length; i++) {
    const event = events[i]!
    if (event.type === 'turn/start') return true
    if (event.type === 'tool/call' && !READ_ONLY_TOOLS.has(event.data.name)) return true
  }
  return false
}

/** The number of the last turn begun on the log (0 before the first). */
function currentTurn(events: readonly SessionEvent[]): number {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'turn/start') return event.data.turn
  }
  return 0
}

function lastSnapshot(events: readonly SessionEvent[]): SessionEvent<'checkpoint/snapshot'> | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'checkpoint/snapshot') return event
  }
  return undefined
}

function lastState(events: readonly SessionEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'checkpoint/snapshot') return event.data.tree
    if (event.type === 'checkpoint/restore') return event.data.tree
  }
  return undefined
}
