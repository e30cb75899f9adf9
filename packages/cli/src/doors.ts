import type { Context } from 'cordis'
import type { Agent, LlmAdapter } from '@keel/agent'
import type { InstructionFile } from '@keel/settings'
import type { Command, Flags } from './args.ts'

/** What the CLI hands a front door (TUI, web host, ACP bridge): a booted context and the parsed command line. */
export interface DoorContext {
  ctx: Context
  flags: Flags
  command: Command
  version: string
  /** The working directory (--cwd or the current one), absolute. */
  cwd: string
  /** The model spec the flags ask for (`provider/model`). */
  modelSpec: string
  /** The project instruction files (AGENTS.md / CLAUDE.md) an agent in `cwd` loads into its system prompt. */
  instructionFiles: InstructionFile[]
  /** A new agent, or the session --continue / --resume names, with the flags' model. */
  openAgent(): Promise<{ agent: Agent; repairs: string[]; resumed: boolean }>
  /** The adapter for a `provider/model` spec, built as the CLI builds the flags' model (`/model` in the TUI). */
  createModel(spec: string): Promise<LlmAdapter>
}

export type FrontDoor = (door: DoorContext) => Promise<number>

/** Front doors live in their own packages and are imported only when their mode is asked for. */
export const FRONT_DOORS: Partial<Record<Command['kind'], () => Promise<FrontDoor>>> = {
  interactive: async () => (await import('@keel/tui')).runInteractive,
  serve: async () => (await import('@keel/web')).runServe,
  acp: async () => (await import('@keel/acp')).runAcp,
}
