import { type Context, Service } from 'cordis'
import type { Agent } from '@keel/agent'
import { keelHome, notify, type Session, type SessionEvent } from '@keel/session'
import { GitError } from './git.ts'
import { Shadow, type Change, type Limits } from './shadow.ts'

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

interface Directory {
  shadow: Shadow
  /** Undefined while the first check runs; a string says why checkpoints are off here. */
  ready: Promise<string | undefined>
  /** How many files the first check found. */
  files?: number
  /** The first snapshot's work (reading every file into the shadow's index), started when a session opens here. */
  warm?: Promise<void>
}

/** A tool that waits longer than this for a snapshot is announced, so a long first snapshot is never a silent stall. */
const SLOW_SNAPSHOT_MS = 1000

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
    // git), and every tool that may change a file, and the turn's end, wait for it: the state it records is still
    // the state before anything of this step changed.
    ctx.on('agent/prepare', async (agent) => this.startSnapshot(agent))
    ctx.on('agent/before-tools', async (agent, tools) => {
      if (tools.some((tool) => !READ_ONLY_TOOLS.has(tool))) await this.waitShown(agent)
    })
    // The first snapshot of a folder reads every file (about 12 s for 30,000): it starts when a session opens there,
    // while the person types or the model thinks, so the first tool call finds the index warm.
    ctx.on('session/created', (session) => {
      if (!this.config.enabled || session.header.parent) return
      const directory = this.directory(session.header.cwd)
      directory.warm ??= directory.ready.then(async (off) => {
        if (!off) await directory.shadow.tree().catch(() => {})
      })
    })
    ctx.on('agent/before-turn-end', async (agent) => {
      await this.pending.get(agent)
    })
    ctx.inject(['invariants'], (ctx) => ctx.invariants.allowBetweenTurns('checkpoint/restore'))
  }

  private directory(cwd: string): Directory {
    let directory = this.directories.get(cwd)
    if (!directory) {
      const shadow = new Shadow(cwd, keelHome())
      directory = { shadow, ready: this.check(shadow) }
      this.directories.set(cwd, directory)
    }
    return directory
  }

  private async check(shadow: Shadow): Promise<string | undefined> {
    try {
      await shadow.init()
      const size = await shadow.measure(this.config)
      const directory = this.directories.get(shadow.cwd)
      if (directory) directory.files = size.files
      if (size.over)
        return `checkpoints are off for ${shadow.cwd}: it holds ${size.over}; files cannot be rewound there`
      return undefined
    } catch (error) {
      return `checkpoints are off for ${shadow.cwd}: ${error instanceof Error ? error.message : String(error)}; files cannot be rewound there`
    }
  }

  /** The snapshot each agent has under way (it never rejects: a failure is a `keel/notice`). */
  private readonly pending = new WeakMap<Agent, Promise<void>>()

  /** Waits for the agent's snapshot; one that holds a tool back past SLOW_SNAPSHOT_MS is said, and its end too. */
  private async waitShown(agent: Agent): Promise<void> {
    const pending = this.pending.get(agent)
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
    const previous = this.pending.get(agent)
    const next = (async () => {
      await previous
      // The request this step is preparing goes out first: starting git costs the main thread a few ms of forking,
      // and no tool can change a file before the snapshot is done (agent/before-tools waits for it).
      await new Promise((done) => setImmediate(done))
      try {
        await this.snapshot(agent)
      } catch (error) {
        notify(this.ctx, 'checkpoint', `checkpoint skipped: ${error instanceof Error ? error.message : String(error)}`)
      }
    })()
    this.pending.set(agent, next)
  }

  /**
   * Per agent, how many log events there were when the tree was last found unchanged after a step that may have
   * changed it: an unchanged tree writes no event, and without this every later step (a read, a todo_write, the
   * answer) would run `git add -A` and `write-tree` again for the same `bash`.
   */
  private readonly verified = new WeakMap<Agent, number>()

  private async snapshot(agent: Agent): Promise<void> {
    const seen = agent.session.events.length
    const kind = needsSnapshot(agent.session.events, this.verified.get(agent) ?? 0)
    if (!kind) return
    const directory = this.directory(agent.cwd)
    const off = await directory.ready
    if (off) {
      if (!this.warned.has(agent.cwd)) {
        this.warned.add(agent.cwd)
        // Checkpoints are off for this directory (no git, or the tree is over the limits).
        notify(this.ctx, 'checkpoint', off)
      }
      return
    }
    await directory.warm
    const tree = await directory.shadow.tree().catch((error: unknown) => {
      notify(this.ctx, 'checkpoint', `checkpoint skipped: ${error instanceof Error ? error.message : String(error)}`)
      return undefined
    })
    if (!tree) return
    const last = lastSnapshot(agent.session.events)
    if (kind.kind === 'change' && last?.data.tree === tree) {
      this.verified.set(agent, seen)
      return
    }
    const commit = await directory.shadow.keep(tree, agent.session.id, `turn ${kind.turn} ${kind.kind}`)
    agent.session.append('checkpoint/snapshot', { turn: kind.turn, kind: kind.kind, tree, commit })
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
    const { shadow, warm } = this.directory(cwd)
    await shadow.init()
    await warm
    if (!(await shadow.hasTree(target)))
      throw new RewindError(`the checkpoint ${target.slice(0, 12)} of session ${id} is missing from ${shadow.gitDir}`)
    const current = await shadow.tree()
    const all = await shadow.diff(current, target)
    const changes = all.filter((change) => !change.repository)
    const repositories = all.filter((change) => change.repository).map((change) => change.path)
    // What the agent last saw: its last snapshot, or the state a previous rewind left.
    const last = lastState(events)
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
 * Whether the next request needs a snapshot first: at a turn's start, or after a step that may have changed files
 * (a tool call among the first `verifiedAt` events was checked already and found to have changed nothing).
 */
function needsSnapshot(
  events: readonly SessionEvent[],
  verifiedAt: number,
): { turn: number; kind: 'turn-start' | 'change' } | undefined {
  let changed = false
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === 'checkpoint/snapshot') return changed ? { turn: event.data.turn, kind: 'change' } : undefined
    if (event.type === 'tool/call' && i >= verifiedAt && !READ_ONLY_TOOLS.has(event.data.name)) changed = true
    if (event.type === 'turn/start') return { turn: event.data.turn, kind: 'turn-start' }
  }
  return undefined
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
