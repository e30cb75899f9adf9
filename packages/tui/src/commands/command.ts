import type { Context } from 'cordis'
import type { AutocompleteItem, TUI } from '@mariozechner/pi-tui'
import type { Agent, LlmAdapter } from '@keel/agent'

export type NoteLevel = 'info' | 'warn' | 'error'

/**
 * What a slash command may do with the app. Commands are functions over this, so one is a module of its own and the
 * app (app.ts) is only the controller that offers these.
 */
export interface CommandActions {
  readonly ctx: Context
  readonly cwd: string
  /** The open agent; after `replaceAgent` this is the new one. */
  readonly agent: Agent
  readonly tui: TUI
  /** Every command the app offers (`/help` lists them). */
  readonly commands: readonly Command[]
  /** A note in the transcript, drawn at once. */
  note(level: NoteLevel, text: string): void
  /** Whether a turn or a `!command` runs; when one does, a note says to cancel it first. */
  busy(): boolean
  /** A turn runs (a `!command` alone does not count). */
  turnRunning(): boolean
  /** Opens the agent `make` returns in place of the open one (closed once the new one opened); false if it threw. */
  replaceAgent(make: () => { agent: Agent; repairs: string[] }, message: string): boolean
  /** Puts text in the editor. */
  setDraft(text: string): void
  quit(): Promise<void>
  readonly model: ModelActions
}

interface ModelActions {
  /** The model in use, as `provider/model` (the footer's). */
  readonly current: string
  /** The model the flags or settings configured. */
  readonly configured: string
  /** Shows `spec` as the model in use. */
  show(spec: string): void
  /** Builds an adapter as the CLI builds the flags' model. */
  make(spec: string, baseUrl?: string): Promise<LlmAdapter>
}

/** One slash command: its name, what `/help` says of it, and what it does. */
export interface Command {
  name: string
  description: string
  aliases?: readonly string[]
  run(actions: CommandActions, arg: string): void | Promise<void>
  /** Completions for the argument as it is typed. */
  complete?(actions: CommandActions, prefix: string): AutocompleteItem[]
}
