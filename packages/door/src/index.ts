// The contract between the `keel` binary and a front door (TUI, web host, ACP bridge). It lives below both so that a
// front door never imports the CLI: the CLI imports the front doors and hands each one a DoorContext. Types only;
// importing this module loads nothing.
import type { Agent, LlmAdapter } from '@keel/agent'
import type { InstructionFile } from '@keel/settings'
import type { Context } from 'cordis'
import type { NotifySettings } from './call-back.ts'

/** The command-line flags a front door reads. The CLI passes its parsed flags, which hold these and more. */
export interface DoorFlags {
  /** --base-url (or the settings' `baseUrl`): the server the model spec's provider talks to. */
  'base-url'?: string
  /** --port for `keel serve`. */
  port?: string
  /** --host for `keel serve`. */
  host?: string
  /** --all for `keel serve`: serve the sessions of every working directory. */
  all?: boolean
  /** --resume, already resolved to a whole session id. */
  resume?: string
  /** --continue: the latest session in the working directory. */
  continue?: boolean
}

/** What the CLI knows before the plugins boot: enough for a front door to start what needs none of them. */
export interface DoorPrelude {
  flags: DoorFlags
  /** The working directory (--cwd or the current one), absolute. */
  cwd: string
  /** The model spec the flags ask for (`provider/model`). */
  modelSpec: string
}

/** What a front door started before the boot; the door takes it over through `DoorContext.started`. */
export interface StartedDoor {
  /** Undoes the start when the door never runs (the boot failed); a no-op once the door has taken it over. */
  abandon(): Promise<void>
}

/**
 * A front door's optional first half, run before the boot (`keel serve` listens and serves its page meanwhile).
 * Undefined when this run cannot start early; the door then does everything after the boot.
 */
export type FrontDoorStart = (prelude: DoorPrelude) => Promise<StartedDoor | undefined>

/** What the CLI hands a front door: a booted context and what the command line asked for. */
export interface DoorContext {
  ctx: Context
  /** What this door's FrontDoorStart returned before the boot, if it ran. */
  started?: StartedDoor
  flags: DoorFlags
  /** The prompt given on the command line (`keel "…"`), run as the first turn; only the TUI takes one. */
  prompt?: string
  version: string
  /** The working directory (--cwd or the current one), absolute. */
  cwd: string
  /** The model spec the flags ask for (`provider/model`). */
  modelSpec: string
  /** The settings' `notify` and `notifyWhen`: how and when this door calls the person back. */
  notify: NotifySettings
  /** The project instruction files (AGENTS.md / CLAUDE.md) an agent in `cwd` loads into its system prompt. */
  instructionFiles: InstructionFile[]
  /** A new agent, or the session --continue / --resume names, with the flags' model. */
  openAgent(): Promise<{ agent: Agent; repairs: string[]; resumed: boolean }>
  /**
   * The adapter for a `provider/model` spec, built as the CLI builds the flags' model (`/model` in the TUI); a
   * reopened session's recorded `baseUrl` is the server it started on.
   */
  createModel(spec: string, baseUrl?: string): Promise<LlmAdapter>
}

/** A front door's entry point: runs until the person is done and returns the process exit code. */
export type FrontDoor = (door: DoorContext) => Promise<number>
export {
  expandSlash,
  isSlashPrompt,
  SlashRefusal,
  skillList,
  slashCommandList,
  type SlashExpansion,
} from './slash.ts'
