import type { FrontDoor, FrontDoorStart } from '@keel/door'
import type { Command } from './args.ts'

/** Front doors live in their own packages and are imported only when their mode is asked for. */
export const FRONT_DOORS: Partial<Record<Command['kind'], () => Promise<FrontDoor>>> = {
  interactive: async () => (await import('@keel/tui')).runInteractive,
  serve: async () => (await import('@keel/web')).runServe,
  acp: async () => (await import('@keel/acp')).runAcp,
}

/** The front doors with a first half that runs before the boot (see FrontDoorStart). */
export const FRONT_DOOR_STARTS: Partial<Record<Command['kind'], () => Promise<FrontDoorStart>>> = {
  serve: async () => (await import('@keel/web')).startServe,
}
