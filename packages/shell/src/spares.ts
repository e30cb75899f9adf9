// A sandboxed `bash` call used to spend most of its time before the command began: the runtime's wrap, bwrap's
// namespaces and mounts, the relays to the proxy (25–30 ms against 3 ms for the command on a quiet machine). After a
// sandboxed command, the next one of that session most often runs in the same sandbox (same cwd, level, temp folder
// and environment), so one is started for it while the model writes the next step: a spare, whose shell waits for
// its command on stdin. The call takes it only if a wrap made now would be the same one (`current`, from
// @keel/sandbox); otherwise it is thrown away and the call wraps as before. A spare runs one command, like any wrap.
//
// It lives for its session's turn: while one waits, the sandbox's placeholders for missing protected files stay on
// disk (as they do while a command runs), so the turn's end, a rewind and the session's close kill it.
import type { PreparedSandbox, SandboxedLevel, SandboxService } from '@keel/sandbox'
import { type PreparedShell, prepareShell } from './run.ts'

/** What a sandboxed call runs with, all of which its spare must have been made for. */
export interface SpareSettings {
  session: string
  cwd: string
  level: SandboxedLevel
  tmpdir: string
  /** Whether the call may ask about hosts (it then runs beside the proxy's relays). */
  network: boolean
  env: Record<string, string>
}

/** The key of the spare a call with `settings` can take. */
export function spareKey(settings: SpareSettings): string {
  const { session, cwd, level, tmpdir, network, env } = settings
  return JSON.stringify([session, cwd, level, tmpdir, network, env])
}

/** How to make a spare for calls with `settings`: a prepared sandbox, and its shell spawned, waiting. */
export function spareRecipe(service: SandboxService, settings: SpareSettings): SpareRecipe {
  const { session, cwd, level, tmpdir, network, env } = settings
  return {
    key: spareKey(settings),
    session,
    make: async () => {
      // The question about hosts is the taker's (`take`); this one only says the relays are wanted.
      const ask = async () => ({ allowed: false as const, reason: 'no command has taken this sandbox' })
      const sandbox = await service.prepare({
        cwd,
        level,
        tmpdir,
        ...(network ? { network: { key: session, ask } } : {}),
      })
      try {
        const shell = prepareShell({ file: sandbox.file, args: sandbox.args, cwd, env, onReport: () => {} })
        return { sandbox, shell }
      } catch (error) {
        // A spawn refused at once (no process to wait for): the wrap holds the placeholders until it is disposed.
        await sandbox.dispose().catch(() => {})
        throw error
      }
    },
  }
}

/** What makes a spare, and which session's turn it belongs to. */
export interface SpareRecipe {
  /** The call's cwd, level, temp folder, environment, and whether it could ask about hosts: what a spare must match. */
  key: string
  session: string
  make(): Promise<{ sandbox: PreparedSandbox; shell: PreparedShell }>
}

interface Spare {
  key: string
  session: string
  made: Promise<{ sandbox: PreparedSandbox; shell: PreparedShell } | undefined>
}

/** A spare that matched its call: the call runs its command in `shell` and then disposes what `take` returned. */
export interface TakenSpare {
  sandbox: PreparedSandbox
  shell: PreparedShell
}

export class Spares {
  /** One spare per key, being made or made. */
  private readonly waiting = new Map<string, Spare>()
  /**
   * The sessions in a turn: only their commands leave a spare. A command outside one (a person's `!command`) would
   * leave its placeholders on disk until the next turn's end.
   */
  private readonly turns = new Set<string>()
  /** Each session's last recipe: a turn's first `bash` call, once the model starts writing it, gets a spare made by it. */
  private readonly recipes = new Map<string, SpareRecipe>()
  private closed = false

  /** `session`'s turn began. */
  begin(session: string): void {
    this.turns.add(session)
  }

  /** The spare for `key` if one is made and still current: the caller's from here. Undefined when none fits. */
  async take(key: string): Promise<TakenSpare | undefined> {
    const spare = this.waiting.get(key)
    if (!spare) return undefined
    this.waiting.delete(key)
    const made = await spare.made
    if (!made) return undefined
    // Checked again after the await, and then nothing awaits before the command is written to it (runCommand).
    if (!made.shell.exited() && (await made.sandbox.current()) && !made.shell.exited()) return made
    void discard(made)
    return undefined
  }

  /** Starts a spare for the recipe's key in the background, unless one is there (or the spares are closed). */
  prepare(recipe: SpareRecipe): void {
    this.recipes.set(recipe.session, recipe)
    if (this.closed || !this.turns.has(recipe.session) || this.waiting.has(recipe.key)) return
    const spare: Spare = {
      key: recipe.key,
      session: recipe.session,
      made: recipe.make().catch(() => undefined),
    }
    this.waiting.set(recipe.key, spare)
  }

  /**
   * The model has begun a tool call in `session`: a turn's first sandboxed command usually follows within a step or
   * two, and gets the spare its session's last command's settings make, or `guess`'s for a session that has run
   * none (a spare after a command is made anyway). A call takes it only if its own settings are the same.
   */
  warm(session: string, guess: () => SpareRecipe | undefined): void {
    const recipe = this.recipes.get(session) ?? guess()
    if (recipe) this.prepare(recipe)
  }

  /** Kills the spares of `session` (its files were rewound). */
  async drop(session: string): Promise<void> {
    const dropped = [...this.waiting.values()].filter((spare) => spare.session === session)
    for (const spare of dropped) this.waiting.delete(spare.key)
    await Promise.all(dropped.map((spare) => spare.made.then((made) => made && discard(made))))
  }

  /** `session`'s turn ended: its spares go, and it makes none until its next turn. */
  end(session: string): Promise<void> {
    this.turns.delete(session)
    return this.drop(session)
  }

  /** `session` closed: nothing of it is kept. */
  forget(session: string): Promise<void> {
    this.recipes.delete(session)
    return this.end(session)
  }

  /** Kills every spare, and makes none after (the plugin goes). */
  async close(): Promise<void> {
    this.closed = true
    const all = [...this.waiting.values()]
    this.waiting.clear()
    await Promise.all(all.map((spare) => spare.made.then((made) => made && discard(made))))
  }
}

async function discard(made: { sandbox: PreparedSandbox; shell: PreparedShell }): Promise<void> {
  await made.shell.kill()
  await made.sandbox.dispose().catch(() => {})
}
